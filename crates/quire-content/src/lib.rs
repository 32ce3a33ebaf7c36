//! Quire's content engine: page trees, GitBook-flavoured markdown, revisions, diff and
//! three-way merge, authoring batches and search sections.
//!
//! This crate is pure: it performs no I/O and has no async code, so that the server can run
//! heavy content work off its request threads (in `spawn_blocking`) and the engine can be
//! tested in isolation. Every function is deterministic.
//!
//! * [`model`]: the revision snapshot (page tree, files, reusable contents, variables).
//! * [`store`]: content-addressed objects with structural sharing; encode, delta, decode.
//! * [`merge`](mod@merge): three-way merge by page id with line-level body merges.
//! * [`edit`]: `updateChangeRequestContent` batches, all or nothing.
//! * [`diff`](mod@diff): semantic changes in the official `RevisionSemanticChange` shape.
//! * [`markdown`], [`document`], [`frontmatter`]: GitBook markdown ⇄ official JSON document.
//! * [`limits`]: the nesting bound that keeps every walk over a document bounded.
//! * [`sections`](mod@sections): per-heading search sections.
//! * [`links`](mod@links): links and backlinks of a revision, with broken targets.
//! * [`html`](mod@html): page documents as safe HTML, with server-side code highlighting.
//! * [`view`]: official JSON shapes of pages and files.
//! * [`condition`]: visibility conditions of docs sites: parse, print, check and evaluate.
//! * [`audience`]: a page body as one visitor sees it (`{% if %}` blocks evaluated).
//! * [`templates`]: built-in space templates.
//! * [`tree_file`]: a revision's page tree without its bodies, compact and quick to read.
//! * [`translate`]: the text runs of a page a translator may see, and their reassembly.
//! * [`gitsync`]: a revision as a repository in Git Sync's layout, and its git objects.
//! * [`convert`](mod@convert): imports (markdown trees, HTML, docx, Confluence, Notion, git
//!   wikis, websites) as pages of the dialect.

#![warn(missing_docs)]

pub mod audience;
pub mod condition;
pub mod convert;
pub mod diff;
pub mod document;
pub mod edit;
pub mod frontmatter;
pub mod gitsync;
pub mod html;
pub mod limits;
pub mod links;
pub mod markdown;
pub mod merge;
pub mod model;
pub mod openapi;
pub mod sections;
pub mod store;
pub mod templates;
pub mod translate;
pub mod tree_file;
pub mod view;

pub use diff::{diff, SemanticChange};
pub use document::Document;
pub use edit::{apply_changes, Applied, ApplyContext, Change, ChangeResult, EditError};
pub use limits::{TooDeep, MAX_DEPTH};
pub use markdown::{
    document_to_markdown, markdown_to_document, normalize_markdown, try_document_to_markdown,
    try_markdown_to_document, try_normalize_markdown,
};
pub use merge::{merge, merge_text, Conflict, ConflictKind, ConflictSubject};
pub use model::{ContentRef, File, Page, PageKind, Revision};
pub use sections::{sections, Section};
pub use store::{
    decode, encode, encode_delta, encode_missing, load_page, Encoded, ObjectHash, StoreError,
};
