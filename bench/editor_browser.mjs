// The editor in headless Chromium (bench/editor.py runs this): how long the editor takes to
// open on a page until it takes typing, and how long after a keystroke the preview shows it.
// Usage: node bench/editor_browser.mjs <base> <cookie value> <editor path> <runs>
// Needs the conformance suite's packages (npm ci in conformance/) and Debian's chromium.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, '..', 'conformance', 'package.json'));
const puppeteer = require('puppeteer-core');

const [base, cookie, path, runsArg] = process.argv.slice(2);
const runs = Number(runsArg || 10);
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

const browser = await puppeteer.launch({
    executablePath: process.env.QUIRE_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
});
try {
    const tab = await browser.newPage();
    await tab.setViewport({ width: 1280, height: 800 });
    const url = new URL(base);
    await tab.setCookie({ name: 'quire_app', value: cookie, domain: url.hostname, path: '/' });
    // Opening: from the navigation's start to an editor that takes typing.
    const open = [];
    for (let i = 0; i < runs + 1; i++) {
        await tab.goto(`${base}${path}`, { waitUntil: 'domcontentloaded' });
        await tab.waitForFunction(() => document.getElementById('editor')?.quireEditor);
        const ms = await tab.evaluate(() => performance.now());
        if (i > 0) open.push(ms); // the first load fills the browser's cache of the script
        await tab.evaluate(() => localStorage.clear());
    }
    // The preview: a keystroke at the end of the page, until the preview holds it.
    const preview = [];
    await tab.click('#editor .cm-content');
    await tab.evaluate(() => {
        const view = document.getElementById('editor').quireEditor;
        view.dispatch({ selection: { anchor: view.state.doc.length } });
    });
    // One key each time (the previous ones already shown): from the key's event in the page
    // to the preview holding the text, timed inside the page.
    await tab.keyboard.type(' w');
    await tab.waitForFunction(() => document.getElementById('preview').textContent.includes(' w'));
    for (let i = 0; i < runs * 2; i++) {
        const key = String(i % 10);
        const before = await tab.evaluate(() => {
            window.quireKeyAt = null;
            document.addEventListener('keydown', () => (window.quireKeyAt ??= performance.now()), { once: true, capture: true });
            return document.getElementById('editor').quireEditor.state.doc.toString().slice(-12).trimEnd();
        });
        await tab.keyboard.press(key);
        const ms = await tab.evaluate(
            (want) =>
                new Promise((resolve) => {
                    const check = () => {
                        if (document.getElementById('preview').textContent.includes(want)) resolve(performance.now() - window.quireKeyAt);
                        else setTimeout(check, 2);
                    };
                    check();
                }),
            (before + key).split(' ').pop(),
        );
        preview.push(ms);
    }
    const lines = await tab.evaluate(() => document.getElementById('editor').quireEditor.state.doc.lines);
    console.log(
        JSON.stringify({
            lines,
            open_p50_ms: pct(open, 50),
            open_max_ms: Math.max(...open),
            preview_p50_ms: pct(preview, 50),
            preview_p95_ms: pct(preview, 95),
        }),
    );
} finally {
    await browser.close();
}
