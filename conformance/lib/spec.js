// Loads the official GitBook OpenAPI specifications and validates response bodies
// against the schema that the specification declares for an operation and status.
//
// Two specs are loaded:
//   spec137 – shipped with @gitbook/api@0.137.0, the client the suite drives;
//   spec202 – shipped with @gitbook/api@0.202.0, only for operations 0.137.0 lacks
//             (createOrganization).

import { createRequire } from 'node:module';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';

const require = createRequire(import.meta.url);

/** OpenAPI 3.0 `nullable: true` turned into plain JSON Schema, recursively, on a copy. */
function convertNullable(node) {
    if (Array.isArray(node)) return node.map(convertNullable);
    if (node === null || typeof node !== 'object') return node;
    const out = {};
    for (const [key, value] of Object.entries(node)) out[key] = convertNullable(value);
    if (out.nullable === true) {
        delete out.nullable;
        if (typeof out.type === 'string' || Array.isArray(out.type)) {
            const types = Array.isArray(out.type) ? out.type : [out.type];
            if (!types.includes('null')) out.type = [...types, 'null'];
            if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
            return out;
        }
        // No `type`: the value is either null or whatever the rest of the schema says.
        return { anyOf: [out, { type: 'null' }] };
    } else if (out.nullable === false) {
        delete out.nullable;
    }
    return out;
}

/** Every `format` value used anywhere in a document. */
function collectFormats(node, acc = new Set()) {
    if (Array.isArray(node)) node.forEach((n) => collectFormats(n, acc));
    else if (node && typeof node === 'object') {
        for (const [key, value] of Object.entries(node)) {
            if (key === 'format' && typeof value === 'string') acc.add(value);
            else collectFormats(value, acc);
        }
    }
    return acc;
}

/** Rewrites document-local `$ref`s (`#/...`) so that they point into the document `docId`. */
function rebaseRefs(node, docId) {
    if (Array.isArray(node)) return node.map((n) => rebaseRefs(n, docId));
    if (node === null || typeof node !== 'object') return node;
    const out = {};
    for (const [key, value] of Object.entries(node)) {
        out[key] =
            key === '$ref' && typeof value === 'string' && value.startsWith('#')
                ? `${docId}${value}`
                : rebaseRefs(value, docId);
    }
    return out;
}

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
addFormats(ajv);

/** Success statuses the service description states instead of the spec's. */
const SEED_STATUS = {
    importContent: { status: 200, spec: 201 },
    importContentInChangeRequest: { status: 200, spec: 201 },
};

/** One loaded specification. */
export class Spec {
    constructor(id, document) {
        this.id = id;
        this.raw = document;
        this.doc = convertNullable(document);
        this.operations = new Map();
        this.routes = [];
        for (const [path, item] of Object.entries(this.doc.paths)) {
            for (const [method, op] of Object.entries(item)) {
                if (!op || typeof op !== 'object' || !op.operationId) continue;
                const entry = { id: op.operationId, method: method.toUpperCase(), path, op };
                this.operations.set(op.operationId, entry);
                const segments = path.split('/').filter(Boolean);
                this.routes.push({
                    entry,
                    literals: segments.filter((s) => !s.startsWith('{')).length,
                    regex: new RegExp(
                        '^/' +
                            segments
                                .map((s, i) =>
                                    // A page path is the one parameter that spans segments
                                    // (`guide/details`); the official client sends it as is.
                                    s === '{pagePath}' && i === segments.length - 1
                                        ? '.+'
                                        : s.startsWith('{')
                                          ? '[^/]+'
                                          : escapeRegex(s),
                                )
                                .join('/') +
                            '/?$',
                    ),
                });
            }
        }
        this.routes.sort((a, b) => b.literals - a.literals);
        for (const f of collectFormats(this.doc)) {
            if (!ajv.formats[f]) ajv.addFormat(f, true);
        }
        ajv.addSchema(this.doc, this.id);
        this.cache = new Map();
    }

    /** The operation declared for a method and an API path (without the `/v1` prefix). */
    match(method, apiPath) {
        const m = method.toUpperCase();
        const route = this.routes.find((r) => r.entry.method === m && r.regex.test(apiPath));
        return route ? route.entry : undefined;
    }

    operation(operationId) {
        const entry = this.operations.get(operationId);
        if (!entry) throw new Error(`operation ${operationId} is not in ${this.id}`);
        return entry;
    }

    /** The response object declared for a status (following a `$ref` to components/responses). */
    response(operationId, status) {
        const { op } = this.operation(operationId);
        // Where the service description states another success status than the spec, it
        // wins; the body is the one the spec declares for its own status.
        const seed = SEED_STATUS[operationId];
        if (seed && status === seed.status) status = seed.spec;
        let res = op.responses?.[String(status)];
        if (!res) return undefined;
        if (res.$ref) {
            const name = res.$ref.split('/').pop();
            res = this.doc.components.responses[name];
        }
        return res;
    }

    /** Compiled validator for a JSON schema in this document (or undefined if none declared). */
    validator(operationId, status) {
        const key = `${operationId}:${status}`;
        if (this.cache.has(key)) return this.cache.get(key);
        const res = this.response(operationId, status);
        const schema = res?.content?.['application/json']?.schema;
        const fn = schema ? ajv.compile(rebaseRefs(schema, this.id)) : undefined;
        this.cache.set(key, fn);
        return fn;
    }

    /** Compiled validator for `#/components/schemas/<name>`. */
    component(name) {
        const key = `#${name}`;
        if (!this.cache.has(key)) {
            this.cache.set(key, ajv.compile({ $ref: `${this.id}#/components/schemas/${name}` }));
        }
        return this.cache.get(key);
    }

    declaredStatuses(operationId) {
        return Object.keys(this.operation(operationId).op.responses ?? {});
    }
}

function escapeRegex(s) {
    return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export const spec137 = new Spec('spec137', require('@gitbook/api/spec/openapi.json'));
export const spec202 = new Spec('spec202', require('@gitbook/api-202/spec/openapi.json'));

/** A failed schema validation. */
export class SchemaViolation extends Error {
    constructor(message, details) {
        super(message);
        this.name = 'SchemaViolation';
        this.details = details;
    }
}

function describe(body) {
    const text = JSON.stringify(body, null, 2);
    return text === undefined ? String(body) : text.length > 4000 ? text.slice(0, 4000) + '…' : text;
}

/** The error body every non-2xx response must carry when the spec declares nothing. */
const errorShape = ajv.compile({
    type: 'object',
    required: ['error'],
    properties: {
        error: {
            type: 'object',
            required: ['code', 'message'],
            properties: {
                code: { type: 'integer' },
                message: { type: 'string', minLength: 1 },
            },
        },
    },
});

/**
 * Validates one response body against the operation's declared response for `status`.
 * Throws a SchemaViolation with the ajv errors and the body when it does not conform.
 *
 * - 2xx: the status must be declared; a declared JSON schema must accept the body; a
 *   declared response without content must come with no body.
 * - other statuses: the declared schema if any, else `{"error":{"code":status,"message"}}`;
 *   in both cases `error.code` must equal the HTTP status.
 */
export function validate(spec, operationId, status, body, { hasBody = body !== undefined } = {}) {
    const where = `${spec.id} ${operationId} → ${status}`;
    const ok = status >= 200 && status < 300;
    const res = spec.response(operationId, status);
    if (ok && !res) {
        throw new SchemaViolation(
            `${where}: status ${status} is not declared (declared: ${spec.declaredStatuses(operationId).join(', ')})\nbody: ${describe(body)}`,
        );
    }
    const fn = spec.validator(operationId, status) ?? (ok ? undefined : errorShape);
    if (!fn) {
        if (hasBody && body !== null && body !== '') {
            throw new SchemaViolation(
                `${where}: the spec declares no content for this status, but a body came back\nbody: ${describe(body)}`,
            );
        }
        return;
    }
    if (!fn(body)) {
        throw new SchemaViolation(
            `${where}: response does not match the official schema\najv errors: ${JSON.stringify(fn.errors, null, 2)}\nbody: ${describe(body)}`,
            fn.errors,
        );
    }
    if (!ok && body?.error?.code !== status) {
        throw new SchemaViolation(
            `${where}: error.code ${body?.error?.code} differs from the HTTP status\nbody: ${describe(body)}`,
        );
    }
}

/** Checks a non-2xx body that no spec declares: `{"error":{"code":status,"message"}}`. */
export function validateErrorShape(where, status, body) {
    if (!errorShape(body)) {
        throw new SchemaViolation(
            `${where} → ${status}: error body does not have the common shape\najv errors: ${JSON.stringify(errorShape.errors, null, 2)}\nbody: ${describe(body)}`,
            errorShape.errors,
        );
    }
    if (body.error.code !== status) {
        throw new SchemaViolation(`${where} → ${status}: error.code ${body.error.code} differs from the HTTP status`);
    }
}
