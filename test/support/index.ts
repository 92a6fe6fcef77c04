export * from './chunking';
