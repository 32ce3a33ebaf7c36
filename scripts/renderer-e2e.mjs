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
//
// With QUIRE_RENDERER_FIXTURES (names of Git Sync fixtures, space-separated, from
// crates/quire-server/tests/fixtures/gitsync/<name>.tar.gz), `seed` also makes one space per
// fixture, pushes the fixture's files to it with git over Quire's smart HTTP (one commit to
// main), publishes a site of it and records its document pages (their `path` in the space's
// content); `check` then requests every one of those pages in both modes and reports per
// fixture the pages requested, those answering 200, and for each other one its status, its
// URL, what the renderer logged meanwhile (RENDERER_E2E_LOG names its log) and the start of
// the body. Any page that is not 200 fails the run.

import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { open, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

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

/** The Git Sync fixtures asked for, by name. */
const FIXTURES = (process.env.QUIRE_RENDERER_FIXTURES ?? '').split(/\s+/).filter(Boolean);
const FIXTURE_DIR = fileURLToPath(
    new URL('../crates/quire-server/tests/fixtures/gitsync/', import.meta.url),
);

/**
 * Runs git in `dir` with no user or system configuration and a fixed identity; what it says
 * (the server's notes on a push among it) is shown only when it fails.
 */
function git(dir, ...args) {
    try {
        execFileSync('git', args, {
            cwd: dir,
            stdio: ['ignore', 'pipe', 'pipe'],
            env: {
                ...process.env,
                GIT_CONFIG_NOSYSTEM: '1',
                GIT_CONFIG_GLOBAL: '/dev/null',
                GIT_TERMINAL_PROMPT: '0',
                GIT_AUTHOR_NAME: 'Renderer',
                GIT_AUTHOR_EMAIL: 'renderer@quire.test',
                GIT_COMMITTER_NAME: 'Renderer',
                GIT_COMMITTER_EMAIL: 'renderer@quire.test',
            },
        });
    } catch (e) {
        // The message would repeat the command line, the remote's URL with its token in it.
        throw new Error(`git ${args[0]} in ${dir} failed (${e.status ?? e.code}): ${e.stderr ?? ''}`);
    }
}

/** The paths of the document pages of a content listing, in order, children after parents. */
function documentPaths(pages) {
    const out = [];
    for (const p of pages ?? []) {
        if (p.type === 'document') out.push(p.path ?? '');
        out.push(...documentPaths(p.pages));
    }
    return out;
}

/**
 * A space of the Git Sync fixture `name`, pushed as one commit to main over git, and a
 * published site of it (made as `seed` makes the handbook's): what `check` needs.
 */
async function fixtureSite(base, token, org, name) {
    const archive = join(FIXTURE_DIR, `${name}.tar.gz`);
    const space = await api(base, token, 'POST', `/v1/orgs/${org}/spaces`, { title: name });
    const tmp = mkdtempSync(join(tmpdir(), 'quire-renderer-fixture-'));
    try {
        execFileSync('tar', ['-xzf', archive, '-C', tmp]);
        const remote = new URL(`/git/${space.id}.git`, base);
        remote.username = 'git';
        remote.password = token;
        git(tmp, 'clone', '-q', remote.toString(), 'work');
        const work = join(tmp, 'work');
        cpSync(join(tmp, name), work, { recursive: true });
        git(work, 'add', '-A');
        git(work, 'commit', '-qm', `${name}: Git Sync repository`);
        git(work, 'push', '-q', 'origin', 'HEAD:main');
    } finally {
        rmSync(tmp, { recursive: true, force: true });
    }
    const site = await api(base, token, 'POST', `/v1/orgs/${org}/sites`, {
        title: name,
        spaces: [space.id],
    });
    const published = await api(base, token, 'POST', `/v1/orgs/${org}/sites/${site.id}/publish`, {});
    const url = published.urls.published;
    const content = await api(base, token, 'GET', `/v1/spaces/${space.id}/content`);
    const pages = documentPaths(content.pages);
    console.log(`seeded ${name}: space ${space.id}, site ${site.id} at ${url}, ${pages.length} pages`);
    return { name, space: space.id, site: site.id, url, pages };
}

async function seed(base, token, statePath) {
    for (const name of FIXTURES) {
        if (!existsSync(join(FIXTURE_DIR, `${name}.tar.gz`))) {
            throw new Error(`no Git Sync fixture ${name} in ${FIXTURE_DIR}`);
        }
    }
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
    if (FIXTURES.length) {
        state.fixtures = [];
        for (const name of FIXTURES) state.fixtures.push(await fixtureSite(base, token, org.id, name));
    }
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
async function render(renderer, mode, siteURL, timeoutMs) {
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
            ...(timeoutMs ? { signal: AbortSignal.timeout(timeoutMs) } : {}),
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
    const fixturesFailed = await checkFixtures(renderer, state.fixtures ?? []);
    process.exit(failed || fixturesFailed ? 1 : 0);
}

/** What was appended to the renderer's log since `from` (bytes), and its new length. */
async function logSince(from) {
    const path = process.env.RENDERER_E2E_LOG;
    if (!path) return { text: '', size: 0 };
    const { size } = await stat(path);
    if (size <= from) return { text: '', size };
    const file = await open(path, 'r');
    try {
        const buf = Buffer.alloc(size - from);
        await file.read(buf, 0, buf.length, from);
        return { text: buf.toString('utf8'), size };
    } finally {
        await file.close();
    }
}

/**
 * A line of the renderer's log that tells of a problem, with ids, tokens and timings
 * blanked so that alike lines count together; null for other lines.
 */
function problemOf(line) {
    if (!/failed with|error|⨯|warn|failed to/i.test(line)) return null;
    // Traces of calls that went well, and the fields of an error printed below it.
    if (/ succeeded in /.test(line) || /^\s*(path|syscall|code|errno):/.test(line)) return null;
    // The renderer's file cache of a page, named by the page's whole context: one kind.
    const cache = line.match(/^Failed to update prerender cache for .* Error: (\w+)/);
    if (cache) return `Failed to update prerender cache for <page> Error: ${cache[1]}`;
    return line
        .replace(/%\{[^}]*\}%/g, '')
        .replace(/\(apiToken:[^)]*\)/g, '(…)')
        .replace(/\b[A-Za-z0-9]{20}\b/g, '{id}')
        .replace(/%2F[A-Za-z0-9]{20}%2F/g, '%2F{id}%2F')
        .replace(/ in [0-9.]+ms/g, '')
        .replace(/"requestId":"[^"]*"/g, '')
        .trim()
        .slice(0, 300);
}

/**
 * Every document page of each fixture's site, in both modes, one request at a time (so that
 * what the renderer logs meanwhile is that page's). Returns the number of pages not 200.
 */
async function checkFixtures(renderer, fixtures) {
    const summary = [];
    let failedAll = 0;
    for (const f of fixtures) {
        const base = f.url.endsWith('/') ? f.url : `${f.url}/`;
        const failures = [];
        let requested = 0;
        let answered = 0;
        const problems = new Map();
        console.log(`-- ${f.name}: ${f.pages.length} pages at ${base}`);
        for (const mode of ['header', 'url']) {
            for (const path of f.pages) {
                const url = new URL(path, base).toString();
                requested++;
                const { size: from } = await logSince(0);
                let status;
                let hops = [];
                let html = '';
                try {
                    ({ status, hops, html } = await render(renderer, mode, url, 180_000));
                } catch (e) {
                    status = `error (${e.cause?.code ?? e.name}: ${e.message})`;
                }
                const { text: logged } = await logSince(from);
                for (const line of logged.split('\n')) {
                    const kind = problemOf(line);
                    if (kind) problems.set(kind, (problems.get(kind) ?? 0) + 1);
                }
                if (status === 200) {
                    answered++;
                    console.log(`ok   ${mode.padEnd(6)} ${url} -> ${hops.join(' -> ')}`);
                    continue;
                }
                let dumped = '';
                if (process.env.RENDERER_E2E_DUMP) {
                    dumped = `${process.env.RENDERER_E2E_DUMP}/${f.name}-${mode}-${url.replace(/[^a-z0-9]+/gi, '_')}.html`;
                    await writeFile(dumped, html);
                }
                failures.push({ mode, url, status, hops, logged, dumped, body: textOf(html).trim() });
                console.log(`FAIL ${mode.padEnd(6)} ${url} -> ${hops.join(' -> ') || status}`);
            }
        }
        summary.push({ name: f.name, requested, answered, failures, problems });
        failedAll += failures.length;
    }
    for (const s of summary) {
        console.log(`\n== fixture ${s.name}: ${s.requested} pages requested, ${s.answered} answered 200`);
        for (const x of s.failures) {
            console.log(`FAIL ${x.status} ${x.mode} ${x.url}${x.hops.length ? ` (${x.hops.join(' -> ')})` : ''}`);
            const lines = x.logged.split('\n').filter((l) => l.trim()).slice(0, 12);
            for (const l of lines) console.log(`       log: ${l.slice(0, 400)}`);
            if (x.dumped) console.log(`       body (${x.dumped}): ${x.body.slice(0, 300)}`);
        }
        const logged = [...s.problems].sort((a, b) => b[1] - a[1]);
        if (logged.length) console.log(`   the renderer's log meanwhile (pages of any status), ids as {id}:`);
        for (const [kind, n] of logged.slice(0, 20)) console.log(`   ${String(n).padStart(5)}x ${kind}`);
    }
    return failedAll;
}

if (command === 'seed' && args.length === 3) {
    await seed(...args);
} else if (command === 'check' && args.length === 2) {
    await check(...args);
} else {
    console.error('usage: renderer-e2e.mjs seed <quire-url> <token> <state.json> | check <renderer-url> <state.json>');
    process.exit(2);
}
