//! The server's index of the repositories in its writable roots: made at the first sandboxed
//! call (the roots are fixed when the server starts) and kept current while the server lives,
//! so that a call looks at what changed instead of searching the workspace.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock, Weak};

use cordon_policies::SandboxRequest;
use cordon_sandbox_linux::RepositoryIndex;

use crate::launch::HelperSettings;

/// One server's index, made on first use.
#[derive(Debug, Default)]
pub(crate) struct ServerIndex {
    index: OnceLock<Option<Arc<RepositoryIndex>>>,
}

impl ServerIndex {
    /// The index of `request`'s writable roots (the server's own request), made now if this is
    /// the first call; `None` where none can be kept (the callers then search, as a one-shot
    /// run does).
    pub(crate) fn get(
        &self,
        request: &SandboxRequest,
        helper: &HelperSettings,
    ) -> Option<Arc<RepositoryIndex>> {
        self.index.get_or_init(|| make(request, helper)).clone()
    }
}

fn make(request: &SandboxRequest, helper: &HelperSettings) -> Option<Arc<RepositoryIndex>> {
    let roots: Vec<PathBuf> = request
        .policy
        .writable_roots(&request.policy_cwd, &helper.user_view.view(), |p| std::fs::canonicalize(p))
        .ok()?;
    if roots.is_empty() {
        return None;
    }
    let started = std::time::Instant::now();
    let index = match RepositoryIndex::new(&roots) {
        Ok(index) => Arc::new(index),
        Err(why) => {
            tracing::warn!(
                "no index of the repositories in the writable roots ({why}): each call searches \
                 them instead, as far as its bound allows"
            );
            return None;
        }
    };
    tracing::debug!(
        watched = index.watched(),
        ms = started.elapsed().as_millis(),
        "index of the repositories made"
    );
    // Events are taken in as they come, between calls too, so the kernel's queue does not
    // overflow while the server waits (an overflow costs a reading of every root).
    if tokio::runtime::Handle::try_current().is_ok() {
        match index.descriptor().and_then(crate::sys::watch_readable) {
            Ok(fd) => {
                tokio::spawn(keep_current(Arc::downgrade(&index), fd));
            }
            Err(error) => tracing::debug!(%error, "the index is brought up to date at calls only"),
        }
    }
    Some(index)
}

/// Takes in the index's events whenever some wait, until the index is dropped.
async fn keep_current(
    index: Weak<RepositoryIndex>,
    fd: tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>,
) {
    loop {
        let Ok(mut ready) = fd.readable().await else { return };
        let Some(index) = index.upgrade() else { return };
        index.catch_up();
        ready.clear_ready();
    }
}
