//! File bytes, content-addressed (named by their sha-256) in an object store: a folder
//! under the data dir by default, or any S3-compatible bucket (`--blob-url s3://bucket/prefix`,
//! credentials from the usual `AWS_*` variables) when several nodes must share them.
//!
//! Download URLs are served by Quire itself, signed and expiring, so that no bearer token is
//! needed to fetch a file whose URL an authorised caller was given.

use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, PutPayload};
use sha2::{Digest, Sha256};

use crate::keys::Keys;

/// How long a download URL stays valid.
pub const DOWNLOAD_TTL_MS: i64 = 60 * 60 * 1000;

/// The blob store.
#[derive(Clone)]
pub struct Blobs {
    store: Arc<dyn ObjectStore>,
    prefix: String,
}

impl std::fmt::Debug for Blobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Blobs({})", self.store)
    }
}

impl Blobs {
    /// Opens the store named by `url` (`s3://...` or `file:///path`), or the local folder.
    pub fn open(url: Option<&str>, local_dir: &std::path::Path) -> anyhow::Result<Self> {
        match url {
            Some(url) if url.starts_with("s3://") => {
                let parsed = url::Url::parse(url)?;
                let store = object_store::aws::AmazonS3Builder::from_env()
                    .with_url(url)
                    .build()?;
                Ok(Self {
                    store: Arc::new(store),
                    prefix: parsed.path().trim_matches('/').to_string(),
                })
            }
            Some(url) if url.starts_with("file://") => {
                Self::local(std::path::Path::new(url.trim_start_matches("file://")))
            }
            Some(other) => {
                anyhow::bail!("unsupported blob URL (expected s3:// or file://): {other}")
            }
            None => Self::local(local_dir),
        }
    }

    fn local(dir: &std::path::Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let store = object_store::local::LocalFileSystem::new_with_prefix(dir)?;
        Ok(Self {
            store: Arc::new(store),
            prefix: String::new(),
        })
    }

    fn path(&self, hash: &str) -> Path {
        let (shard, _) = hash.split_at(2.min(hash.len()));
        if self.prefix.is_empty() {
            Path::from(format!("{shard}/{hash}"))
        } else {
            Path::from(format!("{}/{shard}/{hash}", self.prefix))
        }
    }

    /// Stores bytes and returns their hash (hex sha-256). Storing the same bytes twice is free.
    pub async fn put(&self, bytes: Bytes) -> anyhow::Result<String> {
        let hash = hex::encode(Sha256::digest(&bytes));
        self.store
            .put(&self.path(&hash), PutPayload::from(bytes))
            .await?;
        Ok(hash)
    }

    /// The bytes of a blob, if stored.
    pub async fn get(&self, hash: &str) -> anyhow::Result<Option<Bytes>> {
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        match self.store.get(&self.path(hash)).await {
            Ok(res) => Ok(Some(res.bytes().await?)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(err) => Err(err.into()),
        }
    }

    fn spec_path(&self, hash: &str) -> Path {
        let (shard, _) = hash.split_at(2.min(hash.len()));
        if self.prefix.is_empty() {
            Path::from(format!("openapi/{shard}/{hash}"))
        } else {
            Path::from(format!("{}/openapi/{shard}/{hash}", self.prefix))
        }
    }

    /// Stores a checked OpenAPI document and returns its hash. Documents live apart from
    /// files: a space's purge, which removes the files no space uses, never reaches them.
    pub async fn put_spec(&self, bytes: Bytes) -> anyhow::Result<String> {
        let hash = hex::encode(Sha256::digest(&bytes));
        self.store
            .put(&self.spec_path(&hash), PutPayload::from(bytes))
            .await?;
        Ok(hash)
    }

    /// An OpenAPI document by hash, if stored.
    pub async fn get_spec(&self, hash: &str) -> anyhow::Result<Option<Bytes>> {
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        match self.store.get(&self.spec_path(hash)).await {
            Ok(res) => Ok(Some(res.bytes().await?)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(err) => Err(err.into()),
        }
    }

    /// Removes an OpenAPI document (nothing happens when it is absent).
    pub async fn delete_spec(&self, hash: &str) -> anyhow::Result<()> {
        match self.store.delete(&self.spec_path(hash)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(err) => Err(err.into()),
        }
    }

    fn upload_path(&self, hash: &str) -> Path {
        let (shard, _) = hash.split_at(2.min(hash.len()));
        if self.prefix.is_empty() {
            Path::from(format!("uploads/{shard}/{hash}"))
        } else {
            Path::from(format!("{}/uploads/{shard}/{hash}", self.prefix))
        }
    }

    /// Stores the bytes of a signed upload (`domain::fonts`) under `name` (64 hex digits,
    /// which the caller makes unique to that upload). They live apart from files, as
    /// documents do: a space's purge never reaches them.
    pub async fn put_upload(&self, name: &str, bytes: Bytes) -> anyhow::Result<()> {
        self.store
            .put(&self.upload_path(name), PutPayload::from(bytes))
            .await?;
        Ok(())
    }

    /// Removes a signed upload's bytes (nothing happens when they are absent).
    pub async fn delete_upload(&self, name: &str) -> anyhow::Result<()> {
        match self.store.delete(&self.upload_path(name)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(err) => Err(err.into()),
        }
    }

    /// A signed upload's bytes by name, if stored.
    pub async fn get_upload(&self, hash: &str) -> anyhow::Result<Option<Bytes>> {
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        match self.store.get(&self.upload_path(hash)).await {
            Ok(res) => Ok(Some(res.bytes().await?)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(err) => Err(err.into()),
        }
    }

    fn derived_path(&self, space_id: &str, name: &str) -> Path {
        let rel = format!("derived/{space_id}/{name}");
        if self.prefix.is_empty() {
            Path::from(rel)
        } else {
            Path::from(format!("{}/{rel}", self.prefix))
        }
    }

    /// Stores bytes derived from a space's content (a rendered page listing) under `name`.
    /// Derived bytes can always be made again: they are kept only to save that work.
    pub async fn put_derived(
        &self,
        space_id: &str,
        name: &str,
        bytes: Bytes,
    ) -> anyhow::Result<()> {
        self.store
            .put(&self.derived_path(space_id, name), PutPayload::from(bytes))
            .await?;
        Ok(())
    }

    /// Derived bytes stored under `name`, if any.
    pub async fn get_derived(&self, space_id: &str, name: &str) -> anyhow::Result<Option<Bytes>> {
        match self.store.get(&self.derived_path(space_id, name)).await {
            Ok(res) => Ok(Some(res.bytes().await?)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(err) => Err(err.into()),
        }
    }

    /// When the derived bytes under `name` were written (ms since the epoch), if they are
    /// stored.
    pub async fn derived_written(&self, space_id: &str, name: &str) -> anyhow::Result<Option<i64>> {
        match self.store.head(&self.derived_path(space_id, name)).await {
            Ok(meta) => Ok(Some(meta.last_modified.timestamp_millis())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(err) => Err(err.into()),
        }
    }

    /// Removes everything derived from a space's content.
    pub async fn delete_derived(&self, space_id: &str) -> anyhow::Result<()> {
        use futures_util::TryStreamExt;
        let prefix = self.derived_path(space_id, "");
        let found: Vec<_> = self.store.list(Some(&prefix)).try_collect().await?;
        for meta in found {
            match self.store.delete(&meta.location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(err) => return Err(err.into()),
            }
        }
        Ok(())
    }

    /// Removes the derived bytes of a space written before `before` (ms since the epoch)
    /// whose names are not in `keep`; returns how many were removed.
    pub async fn prune_derived(
        &self,
        space_id: &str,
        keep: &[String],
        before: i64,
    ) -> anyhow::Result<usize> {
        use futures_util::TryStreamExt;
        let prefix = self.derived_path(space_id, "");
        let found: Vec<_> = self.store.list(Some(&prefix)).try_collect().await?;
        let mut removed = 0;
        for meta in found {
            let kept = meta
                .location
                .filename()
                .is_some_and(|name| keep.iter().any(|k| k == name));
            if kept || meta.last_modified.timestamp_millis() >= before {
                continue;
            }
            match self.store.delete(&meta.location).await {
                Ok(()) => removed += 1,
                Err(object_store::Error::NotFound { .. }) => {}
                Err(err) => return Err(err.into()),
            }
        }
        Ok(removed)
    }

    /// Copies every blob this store holds and `dest` lacks into `dest` (derived bytes are
    /// left out: they can be made again); returns how many blobs and bytes were copied.
    /// Blobs are named by their content, so a blob present in `dest` is the same blob.
    pub async fn copy_missing_to(&self, dest: &Blobs) -> anyhow::Result<(u64, u64)> {
        use futures_util::TryStreamExt;
        let root = (!self.prefix.is_empty()).then(|| Path::from(self.prefix.as_str()));
        let found: Vec<_> = self.store.list(root.as_ref()).try_collect().await?;
        let (mut count, mut bytes) = (0u64, 0u64);
        for meta in found {
            let Some(hash) = meta.location.filename() else {
                continue;
            };
            let is_blob = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
            if !is_blob || meta.location.as_ref().contains("derived/") {
                continue;
            }
            // `openapi/<shard>/<hash>` and `uploads/<shard>/<hash>`: OpenAPI documents and
            // signed uploads, each kept in its own folder.
            let parts: Vec<_> = meta.location.parts().collect();
            let folder = (parts.len() >= 3).then(|| parts[parts.len() - 3].as_ref());
            let target = match folder {
                Some("openapi") => dest.spec_path(hash),
                Some("uploads") => dest.upload_path(hash),
                _ => dest.path(hash),
            };
            match dest.store.head(&target).await {
                Ok(_) => continue,
                Err(object_store::Error::NotFound { .. }) => {}
                Err(err) => return Err(err.into()),
            }
            let data = match self.store.get(&meta.location).await {
                Ok(res) => res.bytes().await?,
                // Deleted since it was listed: nothing refers to it any more.
                Err(object_store::Error::NotFound { .. }) => continue,
                Err(err) => return Err(err.into()),
            };
            bytes += data.len() as u64;
            count += 1;
            dest.store.put(&target, PutPayload::from(data)).await?;
        }
        Ok((count, bytes))
    }

    /// Removes a blob (nothing happens when it is absent).
    pub async fn delete(&self, hash: &str) -> anyhow::Result<()> {
        match self.store.delete(&self.path(hash)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(err) => Err(err.into()),
        }
    }
}

/// What a download URL is bound to: one file of one space, read by one user. The file's
/// own content type travels signed in the URL, so two files with the same bytes keep their
/// own types.
#[derive(Debug, Clone)]
pub struct FileLink<'a> {
    /// The space the file belongs to.
    pub space: &'a str,
    /// The file's id in the space's content.
    pub file: &'a str,
    /// The blob holding its bytes.
    pub hash: &'a str,
    /// The file's content type.
    pub content_type: &'a str,
    /// Its name (the last path segment).
    pub name: &'a str,
    /// The user the URL was made for; it stops working when they can no longer read the space.
    pub reader: &'a str,
}

/// The signature of a download URL for `link`, valid until `expires` (ms).
pub fn download_signature(keys: &Keys, link: &FileLink<'_>, expires: i64) -> String {
    let signed = [
        link.space,
        link.file,
        link.hash,
        link.content_type,
        link.reader,
        &expires.to_string(),
    ]
    .join("\n");
    crate::keys::b64(&keys.sign("download", signed.as_bytes())[..16])
}

/// An absolute, signed, expiring URL serving a file's bytes to its reader.
pub fn download_url(base: &str, keys: &Keys, link: &FileLink<'_>, now: i64) -> String {
    // Round the expiry so that the same file renders the same URL for a while (cacheable).
    let expires = (now / DOWNLOAD_TTL_MS + 2) * DOWNLOAD_TTL_MS;
    let sig = download_signature(keys, link, expires);
    let enc = |t: &str| url::form_urlencoded::byte_serialize(t.as_bytes()).collect::<String>();
    format!(
        "{base}/files/{}/{}/{}?hash={}&type={}&reader={}&expires={expires}&signature={sig}",
        enc(link.space),
        enc(link.file),
        // A URL reads `.` and `..` as folders: such a name (stored before names were
        // checked) is carried as another; the signature does not cover the name.
        enc(match link.name {
            "" | "." | ".." => "download",
            name => name,
        }),
        enc(link.hash),
        enc(link.content_type),
        enc(link.reader),
    )
}
