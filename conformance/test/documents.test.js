// The content engine's documents against the official document schema (no server).
//
// `cargo test -p quire-content --test corpus` writes the documents of the corpus pages
// (crates/quire-content/tests/corpus/*.md) to target/corpus-documents.json; every one must
// be a valid `JSONDocument` of @gitbook/api 0.202.0, and those that only use blocks 0.137.0
// knows must be valid there too.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Spec } from '../lib/spec.js';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
// Where the corpus test wrote it: the Cargo target directory (CARGO_TARGET_DIR, if set).
const file = resolve(process.env.CARGO_TARGET_DIR || resolve(here, '..', '..', 'target'), 'corpus-documents.json');

// Where the official schemas contradict themselves, the copies used here are fixed, each
// fix named:
// - 0.202.0 requires `description` in a prompt's data but forbids any property it does not
//   list, and lists no `description`: no prompt could ever validate.
// - 0.202.0's button data is `allOf` the common fields and a `oneOf` whose branches forbid
//   any property but `ref` (or `action`): no button could ever validate.
// - `PlainObject` (an integration's props) has no `type: object`, so a string value matches
//   two branches of its `oneOf`: no props holding a string could ever validate.
function fixed(raw, id) {
    const doc = structuredClone(raw);
    const s = doc.components.schemas;
    s.PlainObject.type = 'object';
    const prompt = s.DocumentBlockPrompt?.properties?.data?.properties;
    if (prompt) prompt.description = { type: 'string' };
    for (const branch of s.DocumentInlineButton.properties.data.allOf?.[1]?.oneOf ?? []) {
        delete branch.additionalProperties;
    }
    return new Spec(id, doc);
}
const spec202 = fixed(require('@gitbook/api-202/spec/openapi.json'), 'spec202-documents');
const spec137 = fixed(require('@gitbook/api/spec/openapi.json'), 'spec137-documents');

// Blocks that 0.137.0 does not have (or not at the top of a document).
const NEWER = new Set(['prompt', 'updates', 'update', 'if', 'columns', 'column', 'button-action']);

function types(node, out = new Set()) {
    if (Array.isArray(node)) node.forEach((n) => types(n, out));
    else if (node && typeof node === 'object') {
        if (node.object === 'block' || node.object === 'inline') out.add(node.type);
        // Buttons that run an action are newer than 0.137.0.
        if (node.type === 'button' && node.data?.action) out.add('button-action');
        Object.values(node).forEach((v) => types(v, out));
    }
    return out;
}

test('corpus documents validate against the official document schema', (t) => {
    if (!existsSync(file)) {
        assert.fail(`${file} is missing: run cargo test -p quire-content --test corpus first`);
    }
    const pages = JSON.parse(readFileSync(file, 'utf8'));
    assert.ok(pages.length > 0);
    const v202 = spec202.component('JSONDocument');
    const v137 = spec137.component('JSONDocument');
    let checked137 = 0;
    for (const { page, document } of pages) {
        assert.ok(v202(document), `${page} (0.202.0): ${JSON.stringify(v202.errors?.slice(0, 5), null, 1)}`);
        const used = types(document);
        if (![...used].some((ty) => NEWER.has(ty))) {
            checked137 += 1;
            assert.ok(v137(document), `${page} (0.137.0): ${JSON.stringify(v137.errors?.slice(0, 5), null, 1)}`);
        }
    }
    t.diagnostic(`${pages.length} documents valid for 0.202.0, ${checked137} also for 0.137.0`);
});
