// Helper of scripts/renderer-e2e.sh (Node 20+, no dependencies).
//
//   node renderer-e2e.mjs seed  <quire-url> <token> <state.json>
//       Seeds Quire through its API: an organization, a space of a few pages (one with a
//       hint, one with a block shown only to visitors with the unsigned claim `beta`), and
//       a published site of that space. Writes what it made to <state.json>.
//   node renderer-e2e.mjs check <renderer-url> <state.json>
//       Requests the site's pages from the renderer in its two modes (`X-GitBook-URL`
//       header, `/url/<host>/...`) and checks the HTML: titles and text present, the
//       guarded text absent for a visitor without the claim and present for one with it.
//       Prints one line per request; exits 1 when a check fails.

import { readFile, writeFile } from 'node:fs/promises';

const [command, ...args] = process.argv.slice(2);

/** The word only the guarded block holds. */
const SECRET = 'quokkazebra';

const PAGES = [
    {
        title: 'Getting started',
        path: 'getting-started',
        markdown:
            'Welcome to the Quire handbook, rendered by the open-source renderer.\n\n' +
            '{% hint style="info" %}\nHints sit beside the text they explain.\n{% endhint %}\n\n' +
            '{% tabs %}\n{% tab title="Linux" %}\nInstall the package.\n{% endtab %}\n' +
            '{% tab title="macOS" %}\nUse the installer.\n{% endtab %}\n{% endtabs %}\n',
        texts: [
            'Welcome to the Quire handbook',
            'Hints sit beside the text they explain.',
            'Install the package.',
        ],
    },
    {
        title: 'Plans',
        path: 'plans',
        markdown:
            'Everyone reads this paragraph.\n\n' +
            `{% if visitor.claims.unsigned.beta === true %}\nThe ${SECRET} plan is for beta visitors.\n{% endif %}\n\n` +
            '## Limits\n\nTen requests a day.\n',
        texts: ['Everyone reads this paragraph.', 'Ten requests a day.'],
    },
    {
        title: 'Install',
        path: 'install',
        markdown: 'Run the server:\n\n```bash\nquire serve --data-dir ./data\n```\n',
        texts: ['Run the server:', 'quire serve'],
    },
];

/** The page of the site's second section (`api`), in a space of its own. */
const REFERENCE = {
    title: 'Reference',
    path: 'reference',
    markdown: 'Every endpoint of the handbook API.\n',
    texts: ['Every endpoint of the handbook API.'],
};

async function api(base, token, method, path, body) {
    const res = await fetch(`${base}${path}`, {
        method,
        headers: {
            authorization: `Bearer ${token}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) {
        throw new Error(`${method} ${path}: ${res.status} ${text}`);
    }
    return text ? JSON.parse(text) : null;
}

/** A space of `pages`, written through a merged change request. */
async function spaceOf(base, token, org, title, pages) {
    const space = await api(base, token, 'POST', `/v1/orgs/${org}/spaces`, { title });
    const cr = await api(base, token, 'POST', `/v1/spaces/${space.id}/change-requests`, {
        subject: 'Pages',
    });
    await api(base, token, 'POST', `/v1/spaces/${space.id}/change-requests/${cr.id}/content`, {
        changes: pages.map((p) => ({
            operation: 'insert_page',
            title: p.title,
            document: { markdown: p.markdown },
        })),
    });
    await api(base, token, 'POST', `/v1/spaces/${space.id}/change-requests/${cr.id}/merge`, {});
    const listed = await api(base, token, 'GET', `/v1/spaces/${space.id}/content/pages`);
    for (const p of pages) {
        const found = listed.pages.find((x) => x.title === p.title);
        if (!found || found.path !== p.path) {
            throw new Error(`page ${p.title}: expected path ${p.path}, got ${JSON.stringify(found)}`);
        }
    }
    return space;
}

async function seed(base, token, statePath) {
    const org = await api(base, token, 'POST', '/v1/orgs', { title: 'Quire Renderer E2E' });
    const space = await spaceOf(base, token, org.id, 'Handbook', PAGES);
    const reference = await spaceOf(base, token, org.id, 'API', [REFERENCE]);
    const site = await api(base, token, 'POST', `/v1/orgs/${org.id}/sites`, {
        title: 'Handbook',
        spaces: [space.id],
    });
    // A second section: the handbook's site space moves into the default one.
    await api(base, token, 'POST', `/v1/orgs/${org.id}/sites/${site.id}/sections`, {
        spaceId: reference.id,
        title: 'API',
    });
    const published = await api(base, token, 'POST', `/v1/orgs/${org.id}/sites/${site.id}/publish`, {});
    const url = published.urls.published;
    const state = { org: org.id, space: space.id, site: site.id, url };
    await writeFile(statePath, JSON.stringify(state, null, 2));
    console.log(`seeded: organization ${org.id}, space ${space.id}, site ${site.id} at ${url}`);
}

/** A plain-text view of an HTML page: tags dropped, the few entities decoded. */
function textOf(html) {
    return html
        .replace(/<script[\s\S]*?<\/script>/gi, ' ')
        .replace(/<style[\s\S]*?<\/style>/gi, ' ')
        .replace(/<[^>]+>/g, ' ')
        .replace(/&#x27;|&#39;/g, "'")
        .replace(/&quot;/g, '"')
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>')
        .replace(/&amp;/g, '&')
        .replace(/\s+/g, ' ');
}

/** The page's <title>. */
function titleOf(html) {
    const m = html.match(/<title[^>]*>([\s\S]*?)<\/title>/i);
    return m ? textOf(m[1]).trim() : '';
}

/**
 * Requests `siteURL` from the renderer in `mode`; follows the renderer's own redirects
 * (visitor parameters moved into a cookie), at most five.
 */
async function render(renderer, mode, siteURL) {
    const target = new URL(siteURL);
    let request =
        mode === 'header'
            ? { url: `${renderer}${target.pathname}${target.search}`, headers: { 'x-gitbook-url': siteURL } }
            : { url: `${renderer}/url/${target.host}${target.pathname}${target.search}`, headers: {} };
    const cookies = new Map();
    const hops = [];
    for (let i = 0; i < 6; i++) {
        const res = await fetch(request.url, {
            redirect: 'manual',
            headers: {
                accept: 'text/html',
                ...request.headers,
                ...(cookies.size
                    ? { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') }
                    : {}),
            },
        });
        for (const c of res.headers.getSetCookie()) {
            const [pair] = c.split(';');
            const eq = pair.indexOf('=');
            cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
        }
        hops.push(res.status);
        // The renderer may send its Location header twice, which fetch joins with ", ".
        const location = res.headers.get('location')?.split(', ')[0];
        if (res.status >= 300 && res.status < 400 && location) {
            const next = new URL(location, request.url);
            if (mode === 'header') {
                // Redirects name the site's own URL (or a path on the renderer): keep asking
                // the renderer with that URL in the header.
                const site =
                    next.origin === new URL(renderer).origin
                        ? new URL(`${next.pathname}${next.search}`, target.origin)
                        : next;
                request = {
                    url: `${renderer}${site.pathname}${site.search}`,
                    headers: { 'x-gitbook-url': site.toString() },
                };
            } else {
                request = { url: next.toString(), headers: {} };
            }
            continue;
        }
        return { status: res.status, hops, html: await res.text() };
    }
    throw new Error(`too many redirects for ${siteURL}`);
}

async function check(renderer, statePath) {
    const state = JSON.parse(await readFile(statePath, 'utf8'));
    const base = state.url.endsWith('/') ? state.url : `${state.url}/`;
    const cases = [];
    for (const mode of ['header', 'url']) {
        cases.push({ mode, url: base, page: PAGES[0] });
        for (const page of PAGES) {
            cases.push({ mode, url: `${base}${page.path}`, page, hidden: page.path === 'plans' });
        }
        cases.push({
            mode,
            url: `${base}plans?visitor.beta=true`,
            page: PAGES[1],
            shown: true,
        });
        // The second section, at its root and at its page.
        cases.push({ mode, url: `${base}api`, page: REFERENCE });
        cases.push({ mode, url: `${base}api/${REFERENCE.path}`, page: REFERENCE });
        // A page's markdown (without its title: Quire's page markdown is the body alone).
        cases.push({ mode, url: `${base}plans.md`, page: PAGES[1], hidden: true, markdown: true });
    }
    let failed = 0;
    for (const c of cases) {
        let line;
        const problems = [];
        try {
            const { status, hops, html } = await render(renderer, c.mode, c.url);
            const text = textOf(html);
            const title = titleOf(html);
            if (status !== 200) problems.push(`status ${status}`);
            if (!c.markdown && !title.includes(c.page.title)) {
                problems.push(`title lacks "${c.page.title}"`);
            }
            const found = c.page.texts.filter((t) => text.includes(t));
            for (const t of c.page.texts) {
                if (!found.includes(t)) problems.push(`text lacks "${t}"`);
            }
            const secret = text.includes(SECRET) || html.includes(SECRET);
            if (c.hidden && secret) problems.push(`guarded text "${SECRET}" shown without the claim`);
            if (c.shown && !secret) problems.push(`guarded text "${SECRET}" missing with the claim`);
            line =
                `${c.mode.padEnd(6)} ${c.url} -> ${hops.join(' -> ')}; ` +
                (c.markdown ? 'markdown; ' : `title "${title}"; `) +
                `text found: ${found.map((t) => JSON.stringify(t)).join(', ') || 'none'}` +
                (c.hidden ? `; guarded text ${secret ? 'SHOWN' : 'absent'}` : '') +
                (c.shown ? `; guarded text ${secret ? 'shown' : 'MISSING'}` : '');
            if (problems.length && process.env.RENDERER_E2E_DUMP) {
                const name = `${process.env.RENDERER_E2E_DUMP}/${c.mode}-${c.url.replace(/[^a-z0-9]+/gi, '_')}.html`;
                await writeFile(name, html);
            }
        } catch (e) {
            problems.push(String(e));
            line = `${c.mode.padEnd(6)} ${c.url} -> error`;
        }
        console.log(`${problems.length ? 'FAIL' : 'ok  '} ${line}`);
        for (const p of problems) console.log(`       ${p}`);
        failed += problems.length ? 1 : 0;
    }
    console.log(`${cases.length - failed}/${cases.length} renderer requests passed`);
    process.exit(failed ? 1 : 0);
}

if (command === 'seed' && args.length === 3) {
    await seed(...args);
} else if (command === 'check' && args.length === 2) {
    await check(...args);
} else {
    console.error('usage: renderer-e2e.mjs seed <quire-url> <token> <state.json> | check <renderer-url> <state.json>');
    process.exit(2);
}
