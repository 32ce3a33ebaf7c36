// What the browser tests share: a headless Chromium driven by puppeteer-core, fresh pages in
// their own browser contexts that record script errors and failed loads, following a link
// or a form to the page it leads to, and axe-core's serious and critical violations.
//
// Chromium: $QUIRE_CHROMIUM, else Debian's /usr/bin/chromium. Without one the browser tests
// are skipped with a notice, unless QUIRE_REQUIRE_BROWSER=1 (scripts/test.sh sets it once it
// has installed Chromium), which makes a missing browser a failure.

import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

/** Where screenshots go. */
export const ARTIFACTS = join(here, '..', 'artifacts');

/** The Chromium binary, or undefined. */
export const CHROMIUM =
    process.env.QUIRE_CHROMIUM ||
    ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((p) => existsSync(p));
if (!CHROMIUM && process.env.QUIRE_REQUIRE_BROWSER === '1') {
    throw new Error('QUIRE_REQUIRE_BROWSER=1 but no Chromium found (set QUIRE_CHROMIUM)');
}

/** `false`, or why the browser tests are skipped (the `skip` option of `test`). */
export const skip = CHROMIUM ? false : 'no Chromium (install Debian\'s chromium or set QUIRE_CHROMIUM)';
if (skip) console.log(`NOTICE: skipping the browser tests: ${skip}`);

/** A headless Chromium, with `args` added to its command line. */
export async function launchBrowser({ args = [] } = {}) {
    const puppeteer = (await import('puppeteer-core')).default;
    return puppeteer.launch({
        executablePath: CHROMIUM,
        headless: true,
        // CI runs as root, where Chromium's sandbox cannot start.
        args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--font-render-hinting=none', ...args],
    });
}

/**
 * A fresh browser context (its own cookies) and a page in it; `close()` ends both. `errors`
 * collects script errors (a refused inline script or style included) and failed loads of
 * anything but the favicon (neither sites nor the app declare one).
 */
export async function freshPage(browser) {
    const context = await browser.createBrowserContext();
    const tab = await context.newPage();
    tab.setDefaultTimeout(15_000);
    const errors = [];
    tab.on('pageerror', (e) => errors.push(e.message));
    tab.on('console', (m) => {
        if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
    });
    tab.on('response', (r) => {
        if (r.status() >= 400 && new URL(r.url()).pathname !== '/favicon.ico') errors.push(`${r.status()} ${r.url()}`);
    });
    return { tab, errors, close: () => context.close() };
}

/** Clicks `selector` (a link or a submit button) and waits for the page it leads to. */
export async function follow(tab, selector) {
    const [res] = await Promise.all([tab.waitForNavigation(), tab.click(selector)]);
    return res;
}

let axeSource;

/**
 * axe-core's serious and critical violations on the page as it is, one line per rule and
 * one per node under it (empty when none). axe is evaluated through the DevTools protocol,
 * which a page's Content-Security-Policy does not govern: no inline script is needed.
 */
export async function seriousViolations(tab) {
    if (!(await tab.evaluate(() => 'axe' in window))) {
        axeSource ??= await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
        await tab.evaluate(axeSource);
    }
    const result = await tab.evaluate(() =>
        // eslint-disable-next-line no-undef
        axe.run(document, { resultTypes: ['violations'] }),
    );
    return result.violations
        .filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map((v) => `${v.impact} ${v.id}: ${v.help}\n${v.nodes.map((n) => `  ${n.target.join(' ')}: ${n.failureSummary}`).join('\n')}`);
}
