// Writes the icons the app offers (icons.txt, one Font Awesome name a line) as one SVG of
// symbols, a line each, from the pinned @fortawesome/fontawesome-free package's solid set.
// Usage: node icons.mjs OUT
import { readFileSync, writeFileSync } from "node:fs";

const names = readFileSync(new URL("icons.txt", import.meta.url), "utf8").split("\n").filter(Boolean);
const dir = new URL("node_modules/@fortawesome/fontawesome-free/", import.meta.url);
const version = JSON.parse(readFileSync(new URL("package.json", dir), "utf8")).version;
const lines = [
  '<svg xmlns="http://www.w3.org/2000/svg">',
  `<!-- Font Awesome Free ${version} by @fontawesome, https://fontawesome.com, icons under CC BY 4.0 (https://fontawesome.com/license/free) -->`,
];
for (const name of names) {
  const svg = readFileSync(new URL(`svgs/solid/${name}.svg`, dir), "utf8");
  const viewBox = svg.match(/viewBox="([^"]+)"/)[1];
  const paths = svg.replace(/<!--[\s\S]*?-->/g, "").match(/<path [^>]*\/>/g);
  if (!paths) throw new Error(`no path in ${name}.svg`);
  lines.push(`<symbol id="icon-${name}" viewBox="${viewBox}">${paths.join("")}</symbol>`);
}
lines.push("</svg>");
writeFileSync(process.argv[2], lines.join("\n") + "\n");
