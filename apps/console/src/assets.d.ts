/** Style sheets imported for esbuild to bundle (build.mjs). */
declare module '*.css';
