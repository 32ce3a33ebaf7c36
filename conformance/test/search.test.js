// Search through the official client: searchSpaceContent and searchOrganizationContent,
// every response validated against the official schemas. A space's index follows merges;
// the organization search only shows spaces the caller can view; bad queries get 400.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg } from '../lib/client.js';
import { updateContent, createChangeRequest } from '../lib/content.js';

let server;
let admin;
let guest;
let org;
let open; // space every member sees
let hidden; // space the guest cannot see

async function publish(space, pages) {
    const cr = await createChangeRequest(admin, space.id, 'Seed');
    await updateContent(
        server,
        admin,
        space.id,
        cr.id,
        pages.map(([title, markdown]) => ({ operation: 'insert_page', title, document: { markdown } })),
    );
    check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr.id), { status: 200 });
}

before(async () => {
    server = await startServer();
    [admin, guest] = await Promise.all(['admin', 'guest'].map((label) => newUser(server, label)));
    org = await setupOrg(server, admin, 'Search Org', [{ user: guest, role: null }]);
    open = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Handbook' }), { status: 201 });
    hidden = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Secrets' }), { status: 201 });
    check('inviteToSpace', await admin.api.spaces.inviteToSpace(open.id, { role: 'read', users: [guest.id] }), { status: 204 });
    await publish(open, [
        ['Installation', '# Installation\n\nDownload the installer and run it.\n\n## Upgrading\n\nUpgrades keep your configuration.\n'],
        ['Billing', '# Billing\n\nInvoices are sent monthly.\n'],
    ]);
    await publish(hidden, [['Installation secrets', 'The installation password is hidden here.\n']]);
});
after(async () => {
    await server?.stop();
});

test('searchSpaceContent: ranked pages with sections, excerpt and app URLs', async () => {
    const data = check('searchSpaceContent', await admin.api.spaces.searchSpaceContent(open.id, { query: 'installation' }), {
        status: 200,
    });
    assert.ok(data.items.length >= 1);
    const first = data.items[0];
    assert.equal(first.title, 'Installation');
    assert.ok(first.sections.length >= 1, 'pages carry their matching sections');
    assert.ok(first.urls.app.startsWith('http'));
    // Stemming: "upgrade" finds "Upgrades"/"Upgrading"; a typo in a long word is forgiven.
    const stem = check('searchSpaceContent', await admin.api.spaces.searchSpaceContent(open.id, { query: 'upgrade' }), { status: 200 });
    assert.equal(stem.items[0]?.title, 'Installation');
    const typo = check('searchSpaceContent', await admin.api.spaces.searchSpaceContent(open.id, { query: 'invoces' }), { status: 200 });
    assert.equal(typo.items[0]?.title, 'Billing');
    const prefix = check('searchSpaceContent', await admin.api.spaces.searchSpaceContent(open.id, { query: 'bill' }), { status: 200 });
    assert.equal(prefix.items[0]?.title, 'Billing');
});

test('searchSpaceContent: the index follows a merge at once', async () => {
    const cr = await createChangeRequest(admin, open.id, 'More');
    await updateContent(server, admin, open.id, cr.id, [
        { operation: 'insert_page', title: 'Troubleshooting', document: { markdown: 'When the flux capacitor fails, restart.\n' } },
    ]);
    check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(open.id, cr.id), { status: 200 });
    const data = check('searchSpaceContent', await admin.api.spaces.searchSpaceContent(open.id, { query: 'capacitor' }), {
        status: 200,
    });
    assert.equal(data.items[0]?.title, 'Troubleshooting');
});

test('searchOrganizationContent: grouped by space, only spaces the caller can view', async () => {
    const all = check(
        'searchOrganizationContent',
        await admin.api.orgs.searchOrganizationContent(org.id, { query: 'installation' }),
        { status: 200 },
    );
    const spaces = all.items.map((s) => s.id).sort();
    assert.deepEqual(spaces, [open.id, hidden.id].sort());
    const mine = check(
        'searchOrganizationContent',
        await guest.api.orgs.searchOrganizationContent(org.id, { query: 'installation' }),
        { status: 200 },
    );
    assert.deepEqual(
        mine.items.map((s) => s.id),
        [open.id],
        'the guest sees only the space shared with them',
    );
});

test('search: empty or over-long queries get 400; strangers get 404', async () => {
    await expectApiError(admin.api.spaces.searchSpaceContent(open.id, { query: '' }), 400, 'searchSpaceContent');
    await expectApiError(admin.api.spaces.searchSpaceContent(open.id, { query: 'x'.repeat(513) }), 400, 'searchSpaceContent');
    await expectApiError(admin.api.orgs.searchOrganizationContent(org.id, { query: '   ' }), 400, 'searchOrganizationContent');
    await expectApiError(guest.api.spaces.searchSpaceContent(hidden.id, { query: 'password' }), 404, 'searchSpaceContent');
});
