// Runs an app's compiled CLI for its bin shim (apps/*/bin/*.js). The shims exist from the clone
// on, so npm links the commands at install time, before the first build; until then they say so.
'use strict';

/**
 * @param {string} command the command's name, for the message; @param {string} entry absolute path of the compiled
 * entry point
 */
module.exports = function runBuilt(command, entry) {
  try {
    require.resolve(entry);
  } catch {
    process.stderr.write(
      `${command}: not built yet; run \`npm run build\` (or \`npm start\`) in the repository first\n`,
    );
    process.exit(2);
  }
  require(entry);
};
