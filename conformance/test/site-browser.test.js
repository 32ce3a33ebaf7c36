// Published sites in a real headless Chromium, against a real `quire serve`: navigation,
// search, share links, visitor tokens, adaptive sections and the 404 page, then a page that
// uses every block of the markdown dialect, checked by axe-core in light and dark and
// photographed on a desktop and a phone (conformance/artifacts/). The browser and what the
// browser tests share: lib/browser.js.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { startServer } from '../lib/server.js';
import { check, newUser, raw, setupOrg } from '../lib/client.js';
import { updateContent } from '../lib/content.js';
import { proveHostname, startDns } from '../lib/hostnames.js';
import { ARTIFACTS, follow, freshPage as newPage, launchBrowser, seriousViolations, skip } from '../lib/browser.js';

/** The domain whose names the browser resolves to this machine. */
const CUSTOM_DOMAIN = 'handbook.test';

let server;
let dns; // the DNS server Quire asks for the proofs of custom hostnames
let browser;
let admin;
let org;
const site = {}; // public, shared, authed: { id, url }
const page = {}; // page ids
let betaUrl; // the conditional section's address
let shareLink; // { id, url }
let visitorKey;

/** An RGB PNG of `w`×`h` with a diagonal gradient (to see images in the screenshots). */
function gradientPng(w, h) {
    const crcTable = Array.from({ length: 256 }, (_, n) => {
        let c = n;
        for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
        return c >>> 0;
    });
    const crc = (buf) => {
        let c = 0xffffffff;
        for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
        return (c ^ 0xffffffff) >>> 0;
    };
    const chunk = (type, data) => {
        const len = Buffer.alloc(4);
        len.writeUInt32BE(data.length);
        const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
        const sum = Buffer.alloc(4);
        sum.writeUInt32BE(crc(body));
        return Buffer.concat([len, body, sum]);
    };
    const ihdr = Buffer.alloc(13);
    ihdr.writeUInt32BE(w, 0);
    ihdr.writeUInt32BE(h, 4);
    ihdr[8] = 8; // bit depth
    ihdr[9] = 2; // RGB
    const rows = [];
    for (let y = 0; y < h; y++) {
        const row = Buffer.alloc(1 + w * 3);
        for (let x = 0; x < w; x++) {
            const t = (x / w + y / h) / 2;
            row[1 + x * 3] = Math.round(52 + 120 * t);
            row[2 + x * 3] = Math.round(109 + 60 * (1 - t));
            row[3 + x * 3] = 219;
        }
        rows.push(row);
    }
    return Buffer.concat([
        Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
        chunk('IHDR', ihdr),
        chunk('IDAT', deflateSync(Buffer.concat(rows))),
        chunk('IEND', Buffer.alloc(0)),
    ]);
}

/** The page that uses every block of the markdown dialect. */
function everyBlock({ guide, install, image, manual }) {
    const fence = '```';
    return [
        'Everything an author can write, on one page.',
        '',
        '## Text',
        '',
        `Some **bold**, _italic_, ~~struck~~ and \`inline code\`, <kbd>Ctrl</kbd>, H<sub>2</sub>O, x<sup>2</sup>, a <mark style="color:red;">coloured</mark> word, a [web link](https://example.com/docs), a [page link](/pages/${install}) and a footnote[^1].`,
        '',
        '> A quotation, set apart.',
        '',
        '***',
        '',
        '1. First step',
        '2. Second step',
        '',
        '- A bullet',
        '  - A nested bullet',
        '',
        'A task list:',
        '',
        '- [ ] Still to do',
        '- [x] Done',
        '',
        '## Hints',
        '',
        ...['info', 'success', 'warning', 'danger'].flatMap((style) => [
            `{% hint style="${style}" %}`,
            `A ${style} hint with **bold** text.`,
            '{% endhint %}',
            '',
        ]),
        '## Tabs',
        '',
        '{% tabs %}',
        '{% tab title="macOS" %}',
        'Install with Homebrew.',
        '{% endtab %}',
        '',
        '{% tab title="Linux" %}',
        'Install with apt.',
        '{% endtab %}',
        '{% endtabs %}',
        '',
        '## Expandable',
        '',
        '<details>',
        '',
        '<summary>More details</summary>',
        '',
        'Folded text.',
        '',
        '</details>',
        '',
        '## Code',
        '',
        '{% code title="main.rs" lineNumbers="true" %}',
        `${fence}rust`,
        'fn main() {',
        '    let name = "Quire";',
        '    println!("Hello, {name}!"); // a comment',
        '}',
        fence,
        '{% endcode %}',
        '',
        '## Table',
        '',
        '| Name | Size | Notes |',
        '| --- | :-: | --- |',
        '| Alpha | 1 | The first |',
        '| Beta | 2 | The second |',
        '',
        '## Images',
        '',
        `<figure><img src="/files/${image}" alt="A blue gradient"><figcaption><p>An image from the space</p></figcaption></figure>`,
        '',
        '## Files',
        '',
        `{% file src="/files/${manual}" %}`,
        'The manual',
        '{% endfile %}',
        '',
        '## Embeds',
        '',
        '{% embed url="https://www.youtube.com/watch?v=quire" %}',
        '',
        '## Page links',
        '',
        `{% content-ref url="/pages/${guide}" %}`,
        `[${guide}](/pages/${guide})`,
        '{% endcontent-ref %}',
        '',
        '## Math',
        '',
        '$$E = mc^2$$',
        '',
        '## Steps and columns',
        '',
        '{% stepper %}',
        '{% step %}',
        'Download Quire.',
        '{% endstep %}',
        '',
        '{% step %}',
        'Run it.',
        '{% endstep %}',
        '{% endstepper %}',
        '',
        '{% columns %}',
        '{% column %}',
        'Left column.',
        '{% endcolumn %}',
        '',
        '{% column %}',
        'Right column.',
        '{% endcolumn %}',
        '{% endcolumns %}',
        '',
        '## API operation',
        '',
        '{% openapi-operation spec="petstore" path="/pets/{id}" method="get" %}',
        '[OpenAPI petstore](https://petstore.example.com/spec.json)',
        '{% endopenapi-operation %}',
        '',
        '[^1]: The footnote\'s text.',
        '',
    ].join('\n');
}

/** An HS256 JWT of `claims` signed with `key`. */
function sign(key, claims) {
    const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const body = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`;
    return `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`;
}

/** A space holding `changes`, merged through one change request; returns the batches' answers. */
async function spaceWith(title, batches) {
    const space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title }), { status: 201 });
    const cr = check('createChangeRequest', await admin.api.spaces.createChangeRequest(space.id, { subject: 'Write' }), {
        status: 201,
    });
    const answers = [];
    for (const batch of batches) {
        const changes = typeof batch === 'function' ? batch(answers) : batch;
        answers.push(await updateContent(server, admin, space.id, cr.id, changes, { compat: false }));
    }
    check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr.id), { status: 200 });
    return { space, answers };
}

/** A published site showing `spaceId`; returns `{ id, url }`. */
async function publishedSite(title, spaceId, visibility) {
    const s = check('createSite', await admin.api.orgs.createSite(org.id, { title, spaces: [spaceId], visibility }), {
        status: 201,
    });
    const published = check('publishSite', await admin.api.orgs.publishSite(org.id, s.id), { status: 200 });
    return { id: s.id, url: published.urls.published };
}

before(async () => {
    if (skip) return;
    // Names under `.handbook.test` reach this machine: a site on its custom hostname.
    const resolver = `--host-resolver-rules=MAP *.${CUSTOM_DOMAIN} 127.0.0.1`;
    dns = await startDns();
    [server, browser] = await Promise.all([
        startServer({ args: ['--dns-server', dns.address] }),
        launchBrowser({ args: [resolver] }),
    ]);
    admin = await newUser(server, 'admin');
    org = await setupOrg(server, admin, 'Browser Org');

    const { space, answers } = await spaceWith('Handbook', [
        [
            { operation: 'insert_page', ref: 'guide', title: 'Guide', document: { markdown: 'Start with the guide.\n' } },
            {
                operation: 'insert_page',
                ref: 'install',
                into: 'guide',
                title: 'Install',
                document: { markdown: 'Install Quire next to the walrus.\n\n## Requirements\n\nA computer.\n' },
            },
            { operation: 'insert_page', ref: 'usage', title: 'Usage', document: { markdown: 'Use it every day.\n' } },
            {
                operation: 'insert_files',
                files: [
                    { base64: gradientPng(480, 160).toString('base64'), name: 'gradient.png', contentType: 'image/png' },
                    { base64: Buffer.from('The manual of Quire.\n').toString('base64'), name: 'manual.txt' },
                ],
            },
        ],
        ([first]) => {
            const id = (ref) => first.changes.find((c) => c.ref === ref).page.id;
            [page.guide, page.install, page.usage] = ['guide', 'install', 'usage'].map(id);
            const [image, manual] = first.insertedFiles.map((f) => f.id);
            return [
                {
                    operation: 'insert_page',
                    ref: 'blocks',
                    title: 'Every block',
                    description: 'Each block of the markdown dialect, rendered.',
                    document: { markdown: everyBlock({ guide: page.guide, install: page.install, image, manual }) },
                },
            ];
        },
    ]);
    page.blocks = answers[1].changes[0].page.id;

    // The public site, with a second section shown only to visitors with the unsigned claim
    // `beta`.
    site.public = await publishedSite('Handbook', space.id, 'public');
    const { space: beta } = await spaceWith('Beta notes', [
        [{ operation: 'insert_page', title: 'Beta features', document: { markdown: 'Features in beta.\n' } }],
    ]);
    const sites = `/v1/orgs/${org.id}/sites/${site.public.id}`;
    const section = await raw(server, 'POST', `${sites}/sections`, {
        token: admin.token,
        body: { spaceId: beta.id, title: 'Beta' },
    });
    assert.equal(section.status, 201, JSON.stringify(section.body));
    const patched = await raw(server, 'PATCH', `${sites}/sections/${section.body.id}`, {
        token: admin.token,
        body: { condition: 'visitor.claims.unsigned.beta === true' },
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    betaUrl = patched.body.urls.published;
    check('publishSite', await admin.api.orgs.publishSite(org.id, site.public.id), { status: 200 });

    site.shared = await publishedSite('Partners', space.id, 'share-link');
    const link = await raw(server, 'POST', `/v1/orgs/${org.id}/sites/${site.shared.id}/share-links`, {
        token: admin.token,
        body: { name: 'Partners' },
    });
    assert.equal(link.status, 201, JSON.stringify(link.body));
    shareLink = { id: link.body.id, url: link.body.urls.published };

    site.authed = await publishedSite('Members', space.id, 'visitor-auth');
    visitorKey = check(
        'getSitePublishingAuthById',
        await admin.api.orgs.getSitePublishingAuthById(org.id, site.authed.id),
        { status: 200 },
    ).privateKey;
});

after(async () => {
    await browser?.close();
    await server?.stop();
    await dns?.stop();
});

/** A fresh browser context (its own cookies) and a page in it; `close()` ends both. */
const freshPage = () => newPage(browser);

const h1 = (tab) => tab.$eval('main h1', (e) => e.textContent.trim());

test('navigation: the sidebar reaches a nested page, previous and next walk the tree', { skip }, async () => {
    const { tab, errors, close } = await freshPage();
    try {
        const res = await tab.goto(site.public.url);
        assert.equal(res.status(), 200);
        assert.equal(await h1(tab), 'Guide');
        assert.equal(await tab.title(), 'Guide | Handbook');

        // Install is nested under Guide in the sidebar.
        const nested = await tab.$$eval('nav[aria-label=Pages] ul ul a', (as) => as.map((a) => a.textContent.trim()));
        assert.ok(nested.includes('Install'), `nested links: ${nested}`);
        await follow(tab, 'nav[aria-label=Pages] ul ul a');
        assert.equal(await h1(tab), 'Install');
        assert.ok(tab.url().endsWith('/guide/install'), tab.url());
        assert.equal(
            await tab.$eval('nav[aria-label=Pages] a[aria-current=page]', (a) => a.textContent.trim()),
            'Install',
        );
        const crumbs = await tab.$$eval('nav[aria-label=Breadcrumb] a', (as) => as.map((a) => a.textContent.trim()));
        assert.ok(crumbs.includes('Guide'), `breadcrumbs: ${crumbs}`);
        // The outline links to the page's heading.
        assert.ok(await tab.$('nav.outline a[href="#requirements"]'), 'outline of Install');

        await follow(tab, 'a[rel=next]');
        assert.equal(await h1(tab), 'Usage');
        await follow(tab, 'a[rel=next]');
        assert.equal(await h1(tab), 'Every block');
        assert.equal(await tab.$('a[rel=next]'), null, 'the last page has no next');
        await follow(tab, 'a[rel=prev]');
        assert.equal(await h1(tab), 'Usage');
        await follow(tab, 'a[rel=prev]');
        assert.equal(await h1(tab), 'Install');

        // Keyboard: the first Tab reaches the skip link, which moves focus to the content.
        await tab.keyboard.press('Tab');
        assert.equal(await tab.evaluate(() => document.activeElement.textContent), 'Skip to content');
        await tab.keyboard.press('Enter');
        assert.equal(await tab.evaluate(() => document.activeElement.id), 'content');
        assert.deepEqual(errors, []);
    } finally {
        await close();
    }
});

test('search: instant results while typing, and the plain form', { skip }, async () => {
    const { tab, errors, close } = await freshPage();
    try {
        await tab.goto(site.public.url);
        await tab.type('#search-q', 'walrus');
        await tab.waitForSelector('#search-instant a', { visible: true });
        const instant = await tab.$$eval('#search-instant a', (as) => as.map((a) => a.textContent));
        assert.equal(instant.length, 1, `instant results: ${instant}`);
        assert.match(instant[0], /^Install/);
        // Down moves into the results, Escape closes them.
        await tab.keyboard.press('ArrowDown');
        assert.equal(await tab.evaluate(() => document.activeElement.closest('#search-instant') !== null), true);
        await tab.keyboard.press('Escape');
        assert.equal(await tab.$eval('#search-instant', (l) => l.hidden), true);
        assert.equal(await tab.evaluate(() => document.activeElement.id), 'search-q');

        // Enter submits the form: the search page lists the same page.
        const [res] = await Promise.all([tab.waitForNavigation(), tab.keyboard.press('Enter')]);
        assert.equal(res.status(), 200);
        assert.ok(new URL(tab.url()).pathname.endsWith('/~search'), tab.url());
        assert.equal(new URL(tab.url()).searchParams.get('q'), 'walrus');
        const results = await tab.$$eval('ol.search-results > li > a', (as) => as.map((a) => a.textContent));
        assert.deepEqual(results, ['Install']);
        await follow(tab, 'ol.search-results > li > a');
        assert.equal(await h1(tab), 'Install');

        // A word on no page: a message, no results.
        await tab.goto(`${site.public.url}~search?q=narwhal`);
        assert.equal(await tab.$('ol.search-results'), null);
        assert.match(await tab.$eval('.search-message', (p) => p.textContent), /No results/);
        assert.deepEqual(errors, []);
    } finally {
        await close();
    }
});

test('share link: the key in the URL, then its cookie; an inactive key gets the 404', { skip }, async () => {
    const { tab, close } = await freshPage();
    try {
        let res = await tab.goto(`${site.shared.url}usage`);
        assert.equal(res.status(), 404, 'a share-link site without a key');
        assert.equal(await h1(tab), 'Page not found');

        res = await tab.goto(shareLink.url);
        assert.equal(res.status(), 200);
        assert.equal(await h1(tab), 'Guide');
        const cookies = await tab.cookies();
        assert.ok(
            cookies.some((c) => c.name === 'quire_share' && c.httpOnly),
            `cookies: ${cookies.map((c) => c.name)}`,
        );
        // The key's cookie opens the site's plain URLs, links included.
        res = await tab.goto(`${site.shared.url}usage`);
        assert.equal(res.status(), 200);
        assert.equal(await h1(tab), 'Usage');
        await follow(tab, 'a[rel=prev]');
        assert.equal(await h1(tab), 'Install');

        const off = await raw(server, 'PATCH', `/v1/orgs/${org.id}/sites/${site.shared.id}/share-links/${shareLink.id}`, {
            token: admin.token,
            body: { active: false },
        });
        assert.equal(off.status, 200, JSON.stringify(off.body));
        res = await tab.goto(shareLink.url);
        assert.equal(res.status(), 404, 'an inactive key');
        assert.equal(await h1(tab), 'Page not found');
        res = await tab.goto(`${site.shared.url}usage`);
        assert.equal(res.status(), 404, 'the cookie of an inactive key');
    } finally {
        await close();
    }
});

test('visitor token: jwt_token in the URL, then its cookie; bad tokens are refused', { skip }, async () => {
    const exp = Math.floor(Date.now() / 1000) + 600;
    const { tab, close } = await freshPage();
    try {
        let res = await tab.goto(site.authed.url);
        assert.equal(res.status(), 404, 'no token');
        res = await tab.goto(`${site.authed.url}?jwt_token=${sign(visitorKey, { exp })}`);
        assert.equal(res.status(), 200);
        assert.equal(await h1(tab), 'Guide');
        assert.ok((await tab.cookies()).some((c) => c.name === 'quire_visitor' && c.httpOnly));
        await follow(tab, 'a[rel=next]');
        assert.equal(await h1(tab), 'Install');
        res = await tab.goto(`${site.authed.url}usage`);
        assert.equal(res.status(), 200, 'the cookie opens plain URLs');
        assert.equal(await h1(tab), 'Usage');
    } finally {
        await close();
    }
    for (const [why, token] of [
        ['wrongly signed', sign('not-the-key', { exp })],
        ['expired', sign(visitorKey, { exp: exp - 1200 })],
        ['unsigned', `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ exp })).toString('base64url')}.`],
    ]) {
        const fresh = await freshPage();
        try {
            const res = await fresh.tab.goto(`${site.authed.url}?jwt_token=${token}`);
            assert.equal(res.status(), 404, why);
            assert.equal(await h1(fresh.tab), 'Page not found', why);
            assert.ok(!(await fresh.tab.cookies()).some((c) => c.name === 'quire_visitor'), `${why}: no cookie`);
        } finally {
            await fresh.close();
        }
    }
});

test('adaptive content: an unsigned claim in the URL shows a hidden section', { skip }, async () => {
    const { tab, close } = await freshPage();
    try {
        const tabs = () =>
            tab.$$eval('nav[aria-label=Sections] a', (as) => as.map((a) => a.textContent.trim())).catch(() => []);
        await tab.goto(site.public.url);
        assert.ok(!(await tabs()).includes('Beta'), `sections without the claim: ${await tabs()}`);
        let res = await tab.goto(betaUrl);
        assert.equal(res.status(), 404, 'the hidden section by its URL');

        await tab.goto(`${site.public.url}?visitor.beta=true`);
        assert.ok((await tabs()).includes('Beta'), `sections with the claim: ${await tabs()}`);
        res = await tab.goto(`${betaUrl}?visitor.beta=true`);
        assert.equal(res.status(), 200);
        assert.equal(await h1(tab), 'Beta features');
        // A claim with another value hides it again.
        res = await tab.goto(`${betaUrl}?visitor.beta=false`);
        assert.equal(res.status(), 404);
    } finally {
        await close();
    }
});

test('custom hostname: the site at the root of its own name, links and assets on it', { skip }, async () => {
    const { space } = await spaceWith('Own name', [
        [
            { operation: 'insert_page', title: 'Welcome', document: { markdown: 'Served on its own name.\n' } },
            { operation: 'insert_page', title: 'Details', document: { markdown: 'More on its own name.\n' } },
        ],
    ]);
    const own = await publishedSite('Own name', space.id, 'public');
    // Of this run alone: a hostname belongs to one site on the whole server.
    const host = `docs-${Date.now().toString(36)}.${CUSTOM_DOMAIN}`;
    const patched = check(
        'updateSiteById',
        await admin.api.orgs.updateSiteById(org.id, own.id, { hostname: host }),
        { status: 200 },
    );
    await proveHostname(server, dns, admin, org.id, own.id, host);
    const port = new URL(server.url).port;
    assert.equal(patched.urls.published, `http://${host}/`);
    const { tab, errors, close } = await freshPage();
    try {
        const res = await tab.goto(`http://${host}:${port}/`);
        assert.equal(res.status(), 200);
        assert.equal(await h1(tab), 'Welcome');
        // The stylesheet came from the same name (a failed load would be in `errors`).
        const background = await tab.$eval('body', (b) => getComputedStyle(b).backgroundColor);
        assert.notEqual(background, 'rgba(0, 0, 0, 0)', 'the stylesheet applies');
        await follow(tab, 'nav[aria-label=Pages] a[href="/details"]');
        assert.equal(tab.url(), `http://${host}:${port}/details`);
        assert.equal(await h1(tab), 'Details');
        const canonical = await tab.$eval('link[rel=canonical]', (l) => l.href);
        assert.equal(canonical, `http://${host}:${port}/details`);
        // A redirect of the site, followed on its own name.
        const [siteSpace] = check(
            'listSiteSpaces',
            await admin.api.orgs.listSiteSpaces(org.id, own.id),
            { status: 200 },
        ).items;
        const rev = check('getCurrentRevision', await admin.api.spaces.getCurrentRevision(space.id), {
            status: 200,
        });
        const details = rev.pages.find((p) => p.title === 'Details');
        check(
            'createSiteRedirect',
            await admin.api.orgs.createSiteRedirect(org.id, own.id, {
                source: '/old/details',
                destination: { kind: 'site-page', siteSpaceId: siteSpace.id, pageId: details.id },
            }),
            { status: 201 },
        );
        const moved = await tab.goto(`http://${host}:${port}/old/details`);
        // The page was seen before: the browser may revalidate its copy (304).
        assert.ok([200, 304].includes(moved.status()), `${moved.status()}`);
        assert.equal(moved.request().redirectChain().length, 1);
        assert.equal(tab.url(), `http://${host}:${port}/details`);
        assert.equal(await h1(tab), 'Details');
        assert.deepEqual(errors, []);
    } finally {
        await close();
    }
});

test('custom hostname: opening pages there records their views, read back by aggregateSiteEvents', { skip }, async () => {
    const { space } = await spaceWith('Counted', [
        [
            { operation: 'insert_page', title: 'Start', document: { markdown: 'Counted on its own name.\n' } },
            { operation: 'insert_page', title: 'Next', document: { markdown: 'Counted too.\n' } },
        ],
    ]);
    const counted = await publishedSite('Counted', space.id, 'public');
    const host = `insights-${Date.now().toString(36)}.${CUSTOM_DOMAIN}`;
    check('updateSiteById', await admin.api.orgs.updateSiteById(org.id, counted.id, { hostname: host }), {
        status: 200,
    });
    await proveHostname(server, dns, admin, org.id, counted.id, host);
    const port = new URL(server.url).port;
    const { tab, errors, close } = await freshPage();
    const sent = [];
    tab.on('request', (req) => {
        if (req.method() === 'POST' && req.url().endsWith('/~insights')) sent.push(req);
    });
    try {
        await tab.goto(`http://${host}:${port}/`, { waitUntil: 'networkidle0' });
        assert.equal(await h1(tab), 'Start');
        await follow(tab, 'nav[aria-label=Pages] a[href="/next"]');
        await tab.waitForNetworkIdle();
        assert.equal(await h1(tab), 'Next');
        assert.deepEqual(errors, []);
        // Sent inside the site's own name, without a cookie or anything of the visitor.
        assert.equal(sent.length, 2);
        for (const req of sent) {
            assert.equal(req.url(), `http://${host}:${port}/~insights`);
            assert.equal(req.headers().cookie, undefined);
            const [event] = JSON.parse(req.postData()).events;
            assert.equal(event.type, 'page_view');
            assert.deepEqual(
                [event.session.visitorId, event.session.sessionId, event.session.userAgent, event.session.cookies],
                ['', '', '', {}],
            );
        }
    } finally {
        await close();
    }
    // Counted per page, as the site's members read them.
    let result;
    for (let i = 0; i < 50; i++) {
        result = check(
            'aggregateSiteEvents',
            await admin.api.orgs.aggregateSiteEvents(org.id, counted.id, {
                range: 'last24Hours',
                select: [{ column: 'page' }, { column: 'eventsCount' }],
                where: [{ column: 'eventType', values: ['page_view'] }],
            }),
            { status: 200 },
        );
        if (result.columns[1].values.length === 2) break;
        await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(result.columns[1].values, [1, 1]);
    assert.ok(result.columns[0].values.every((p) => p.space === space.id));
});

test('404: an unknown page and an unknown site get a real 404 page', { skip }, async () => {
    const { tab, close } = await freshPage();
    try {
        let res = await tab.goto(`${site.public.url}no-such-page`);
        assert.equal(res.status(), 404);
        assert.equal(await h1(tab), 'Page not found');
        assert.match(await tab.title(), /Page not found/);
        assert.equal(await tab.$eval('meta[name=robots]', (m) => m.content), 'noindex');
        // Its link goes home.
        await follow(tab, 'main a');
        assert.equal(await h1(tab), 'Guide');

        res = await tab.goto(`${server.url}/sites/no-such-site/`);
        assert.equal(res.status(), 404);
        assert.equal(await h1(tab), 'Page not found');
    } finally {
        await close();
    }
});

const VIEWPORTS = {
    desktop: { width: 1280, height: 800 },
    phone: { width: 390, height: 844, isMobile: true, hasTouch: true, deviceScaleFactor: 2 },
};

test('every block renders, axe finds nothing serious in light and dark, screenshots', { skip }, async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    const { tab, errors, close } = await freshPage();
    try {
        await tab.setViewport(VIEWPORTS.desktop);
        const url = `${site.public.url}every-block`;
        const res = await tab.goto(url, { waitUntil: 'load' });
        assert.equal(res.status(), 200);
        if (process.env.QUIRE_DUMP) console.log(await tab.$eval('main', (m) => m.outerHTML));
        assert.equal(await h1(tab), 'Every block');

        // Each block is there, in its rendered form.
        const count = (selector) => tab.$$eval(`main .content ${selector}`, (els) => els.length);
        for (const [selector, n] of [
            ['h2[id]', 13],
            ['aside.hint', 4],
            ['[role=tablist] [role=tab]', 2],
            ['details.expandable > summary', 1],
            ['figure.code-block figcaption.code-title', 1],
            ['pre code.language-rust span[class^=hl-]', 1],
            ['table thead th[scope=col]', 3],
            ['figure.image img', 1],
            ['.file a.file-link[download]', 1],
            ['.embed a.embed-link', 1],
            ['.content-ref a.content-ref-link', 1],
            ['.math', 1],
            ['ol.stepper > li.step', 2],
            ['.columns > .column', 2],
            ['.openapi-method', 1],
            ['blockquote', 1],
            ['hr', 1],
            ['.task-list input[type=checkbox]', 2],
            ['sup.note-ref a', 1],
            ['mark', 1],
            ['kbd', 1],
        ]) {
            const got = await count(selector);
            assert.ok(got >= n, `${selector}: ${got}, expected at least ${n}`);
        }
        // The image (lazily loaded) is served from the space.
        const width = await tab.$eval('figure.image img', async (img) => {
            img.scrollIntoView();
            await img.decode();
            return img.naturalWidth;
        });
        assert.equal(width, 480, 'the image loads');
        await tab.evaluate(() => window.scrollTo(0, 0));
        const fileHref = await tab.$eval('.file a.file-link', (a) => a.href);
        const file = await fetch(fileHref);
        assert.equal(file.status, 200);
        assert.equal(await file.text(), 'The manual of Quire.\n');
        // Page links point at the published pages.
        assert.deepEqual(
            await tab.$eval('.content-ref a', (a) => [a.getAttribute('href'), a.textContent]),
            [new URL(`${site.public.url}guide`).pathname, 'Guide'],
        );
        // Tabs: one panel at a time with the script; a click switches.
        const shown = () =>
            tab.$$eval('main [role=tabpanel]', (ps) => ps.filter((p) => !p.hidden).map((p) => p.textContent));
        assert.equal((await shown()).length, 1);
        assert.match((await shown())[0], /Homebrew/);
        await tab.click('main [role=tab][aria-selected=false]');
        assert.match((await shown())[0], /apt/);
        assert.equal((await shown()).length, 1);
        // And the arrow keys move between tabs.
        await tab.keyboard.press('ArrowRight');
        assert.match((await shown())[0], /Homebrew/);
        assert.equal(await tab.evaluate(() => document.activeElement.textContent), 'macOS');
        await tab.keyboard.press('ArrowLeft');
        assert.match((await shown())[0], /apt/);
        // The expandable opens.
        assert.equal(await tab.$eval('details.expandable', (d) => d.open), false);
        await tab.click('details.expandable > summary');
        assert.equal(await tab.$eval('details.expandable', (d) => d.open), true);
        await tab.click('details.expandable > summary');

        const failures = [];
        for (const scheme of ['light', 'dark']) {
            await tab.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: scheme }]);
            // (A viewport switching between desktop and phone reloads the page: axe is injected
            // again when missing.)
            const serious = await seriousViolations(tab);
            if (serious.length) failures.push(`axe in ${scheme}:\n${serious.join('\n')}`);

            for (const [name, viewport] of Object.entries(VIEWPORTS)) {
                await tab.setViewport(viewport);
                // Every image loaded (they are lazy), then the top of the page and all of it.
                await tab.evaluate(async () => {
                    const images = [...document.images];
                    images.forEach((img) => (img.loading = 'eager'));
                    await Promise.all(images.map((img) => img.decode().catch(() => {})));
                    window.scrollTo(0, 0);
                });
                await tab.screenshot({ path: join(ARTIFACTS, `every-block-${scheme}-${name}.png`) });
                await tab.screenshot({ path: join(ARTIFACTS, `every-block-${scheme}-${name}-full.png`), fullPage: true });
                // Nothing wider than the screen: the page never scrolls sideways.
                const overflow = await tab.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
                if (overflow > 0) failures.push(`${scheme} ${name}: the page is ${overflow}px wider than the screen`);
            }
            await tab.setViewport(VIEWPORTS.desktop);
        }
        assert.deepEqual(failures, []);
        assert.deepEqual(errors, []);
    } finally {
        await close();
    }
});
