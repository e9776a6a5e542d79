//! SIGINT, SIGTERM and SIGHUP as one stream, for whatever ends or passes on a run when cordon
//! receives one.
//!
//! A signal cordon inherited as ignored (`nohup cordon exec …`) stays ignored: no handler is
//! installed for it, so cordon goes on through it and every child inherits it ignored, the
//! command included. What was inherited is read once, before the first handler of cordon's
//! replaces an inherited disposition (only this module installs them).

use std::sync::OnceLock;
use std::task::Poll;

use tokio::signal::unix::{Signal, SignalKind, signal};

/// The signals that end a run, and their stream kinds.
const INTERRUPTS: [(libc::c_int, fn() -> SignalKind); 3] = [
    (libc::SIGINT, SignalKind::interrupt),
    (libc::SIGTERM, SignalKind::terminate),
    (libc::SIGHUP, SignalKind::hangup),
];

/// The interrupts this process listens for (see the module docs).
pub(crate) struct Interrupts {
    streams: Vec<(libc::c_int, Signal)>,
}

impl Interrupts {
    /// Installs cordon's handlers for the interrupts it did not inherit ignored; one that
    /// cannot be installed keeps its default action (it ends cordon, and the parent-death
    /// signal its children).
    pub(crate) fn new() -> Interrupts {
        let ignored = inherited_ignored();
        let streams = INTERRUPTS
            .iter()
            .zip(ignored)
            .filter(|(_, ignored)| !ignored)
            .filter_map(|((number, kind), _)| Some((*number, signal(kind()).ok()?)))
            .collect();
        Interrupts { streams }
    }

    /// The next interrupt's number; never returns when none is listened for.
    pub(crate) async fn recv(&mut self) -> libc::c_int {
        std::future::poll_fn(|cx| {
            for (number, stream) in &mut self.streams {
                if let Poll::Ready(Some(())) = stream.poll_recv(cx) {
                    return Poll::Ready(*number);
                }
            }
            Poll::Pending
        })
        .await
    }
}

/// For each of [`INTERRUPTS`], whether this process started with it ignored.
fn inherited_ignored() -> [bool; 3] {
    static IGNORED: OnceLock<[bool; 3]> = OnceLock::new();
    *IGNORED.get_or_init(|| INTERRUPTS.map(|(number, _)| crate::sys::signal_ignored(number)))
}
