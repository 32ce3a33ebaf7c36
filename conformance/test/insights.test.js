// Site insights through the official client: a published site's events tracked without a
// token (and through the site's own `~insights` path), read back by aggregateSiteEvents
// grouped and filtered, the visitor segments, and the refusals; every answer checked
// against the spec.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { check, client, expectApiError, newUser, setupOrg } from '../lib/client.js';
import { createChangeRequest, updateContent } from '../lib/content.js';

let server;
let admin;
let reader;
let org;
let site;
let space;
let siteSpace;
const page = {};

before(async () => {
    server = await startServer();
    [admin, reader] = await Promise.all(['admin', 'reader'].map((label) => newUser(server, label)));
    org = await setupOrg(server, admin, 'Insights Org', [{ user: reader, role: 'read' }]);
    space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Guide' }), { status: 201 });
    const cr = await createChangeRequest(admin, space.id, 'Write');
    const written = await updateContent(
        server,
        admin,
        space.id,
        cr.id,
        [
            { operation: 'insert_page', ref: 'intro', title: 'Intro', document: { markdown: 'Welcome.' } },
            { operation: 'insert_page', ref: 'install', title: 'Install', document: { markdown: 'Install it.' } },
        ],
        { compat: false },
    );
    for (const ref of ['intro', 'install']) page[ref] = written.changes.find((c) => c.ref === ref).page.id;
    check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr.id), { status: 200 });
    site = check('createSite', await admin.api.orgs.createSite(org.id, { title: 'Docs', spaces: [space.id] }), {
        status: 201,
    });
    check('publishSite', await admin.api.orgs.publishSite(org.id, site.id), { status: 200 });
    const spaces = check('listSiteSpaces', await admin.api.orgs.listSiteSpaces(org.id, site.id), { status: 200 });
    siteSpace = spaces.items[0].id;
});
after(async () => {
    await server?.stop();
});

/** An event of `type` on `pageId` (a `SiteInsightsEvent`), with `extra` fields. */
function event(type, pageId, extra = {}) {
    return {
        type,
        session: { visitorId: '', sessionId: '', cookies: {}, userAgent: '', language: null, referrer: null },
        location: {
            url: `${server.url}/sites/${site.id}/`,
            siteSection: null,
            siteSpace,
            siteShareKey: null,
            space: space.id,
            revision: null,
            page: pageId,
        },
        ...extra,
    };
}

/** The answer's columns as `{ name: values }`. */
const columns = (result) => Object.fromEntries(result.columns.map((c) => [c.column, c.values]));

test('events tracked without a token add up when aggregated', async () => {
    const anonymous = client(server);
    const events = [
        event('page_view', page.intro),
        event('page_view', page.intro),
        event('page_view', page.install),
        event('search_type_query', null, { query: 'install' }),
        event('page_post_feedback', page.install, { feedback: { rating: 'good' } }),
        event('link_click', page.intro, {
            link: { target: { kind: 'url', url: 'https://example.org/' }, position: 'content' },
        }),
    ];
    check(
        'trackEventsInSiteById',
        await anonymous.orgs.trackEventsInSiteById(org.id, site.id, { events }),
        { status: 204 },
    );

    const byType = check(
        'aggregateSiteEvents',
        await reader.api.orgs.aggregateSiteEvents(org.id, site.id, {
            range: 'last7Days',
            groupBy: [{ column: 'eventType' }],
        }),
        { status: 200 },
    );
    const c = columns(byType);
    const counts = Object.fromEntries(c.eventType.map((t, i) => [t, c.eventsCount[i]]));
    assert.deepEqual(counts, { page_view: 3, search_type_query: 1, page_post_feedback: 1, link_click: 1 });

    const topPages = check(
        'aggregateSiteEvents',
        await admin.api.orgs.aggregateSiteEvents(org.id, site.id, {
            range: 'last30Days',
            select: [{ column: 'page' }, { column: 'eventsCount' }, { column: 'pageFeedbackRating' }],
            where: [{ column: 'eventType', values: ['page_view', 'page_post_feedback'] }],
            order: { by: { column: 'eventsCount' }, direction: 'desc' },
        }),
        { status: 200 },
    );
    const t = columns(topPages);
    const byPage = Object.fromEntries(
        t.page.map((p, i) => [p.page, { space: p.space, events: t.eventsCount[i], ratings: t.pageFeedbackRating[i] }]),
    );
    assert.deepEqual(byPage, {
        [page.install]: { space: space.id, events: 2, ratings: { bad: 0, ok: 0, good: 1 } },
        [page.intro]: { space: space.id, events: 2, ratings: { bad: 0, ok: 0, good: 0 } },
    });

    const perDay = check(
        'aggregateSiteEvents',
        await admin.api.orgs.aggregateSiteEvents(org.id, site.id, {
            range: 'last24Hours',
            groupBy: [{ column: 'datetime', interval: 'day' }],
        }),
        { status: 200 },
    );
    assert.deepEqual(columns(perDay).eventsCount, [6]);

    const segments = check(
        'listSiteVisitorSegments',
        await reader.api.orgs.listSiteVisitorSegments(org.id, site.id),
        { status: 200 },
    );
    assert.deepEqual(segments.items, []);
});

test("the site's own ~insights path counts the same events", async () => {
    const res = await fetch(`${server.url}/sites/${site.id}/~insights`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ events: [event('page_view', page.install)] }),
    });
    assert.equal(res.status, 204);
    const result = check(
        'aggregateSiteEvents',
        await admin.api.orgs.aggregateSiteEvents(org.id, site.id, {
            range: 'last7Days',
            select: [{ column: 'page' }, { column: 'eventsCount' }],
            where: [{ column: 'page', values: [{ page: page.install, space: space.id }] }, { column: 'eventType', values: ['page_view'] }],
        }),
        { status: 200 },
    );
    assert.deepEqual(columns(result).eventsCount, [2]);
});

test('refusals: an unknown event type, a column Quire does not keep, members only', async () => {
    const anonymous = client(server);
    const body = await expectApiError(
        anonymous.orgs.trackEventsInSiteById(org.id, site.id, { events: [event('page_scroll', page.intro)] }),
        400,
        'trackEventsInSiteById',
    );
    assert.match(body.error.message, /events\[0\]\.type/);
    const refused = await expectApiError(
        admin.api.orgs.aggregateSiteEvents(org.id, site.id, {
            range: 'last7Days',
            select: [{ column: 'visitorsCount' }],
        }),
        400,
        'aggregateSiteEvents',
    );
    assert.match(refused.error.message, /select\[0\]\.column/);
    await expectApiError(
        anonymous.orgs.aggregateSiteEvents(org.id, site.id, { range: 'last7Days' }),
        401,
        'aggregateSiteEvents',
    );
    const outsider = await newUser(server, 'outsider');
    await expectApiError(
        outsider.api.orgs.aggregateSiteEvents(org.id, site.id, { range: 'last7Days' }),
        404,
        'aggregateSiteEvents',
    );
    // A site that is not published takes no events.
    check('unpublishSite', await admin.api.orgs.unpublishSite(org.id, site.id), { status: 200 });
    await expectApiError(
        anonymous.orgs.trackEventsInSiteById(org.id, site.id, { events: [event('page_view', page.intro)] }),
        404,
        'trackEventsInSiteById',
    );
    check('publishSite', await admin.api.orgs.publishSite(org.id, site.id), { status: 200 });
});
