/**
 * The `multiline` framing: each SSE `data:` line carrying JSON is cut into several `data:` lines
 * at its first commas (between JSON members, outside strings). Valid SSE (the WHATWG event stream
 * format joins an event's data lines with `\n`, and a newline between JSON tokens is whitespace),
 * and what some servers and proxies emit; a reader that takes each line as a whole chunk breaks.
 */

/** Rewrites every `data: {…}` line of `text` into up to three data lines. */
export function multilineData(text: string): string {
  return text.replace(/^data: (\{.*\})$/gm, (_line, json: string) => `data: ${splitJson(json).join('\ndata: ')}`);
}

/** Cuts a compact JSON text after its first two top-level-or-nested commas outside strings. */
function splitJson(json: string): string[] {
  const parts: string[] = [];
  let start = 0;
  let inString = false;
  for (let i = 0; i < json.length && parts.length < 2; i++) {
    const char = json[i];
    if (inString) {
      if (char === '\\') i++;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === ',') {
      parts.push(json.slice(start, i + 1));
      start = i + 1;
    }
  }
  parts.push(json.slice(start));
  return parts;
}
