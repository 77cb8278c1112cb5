//! The stdio transport: the editor's byte streams as JSON-RPC frames. stdin and stdout are read and written on
//! two threads of their own, started with the transport before anything else (a pending stdin read never holds
//! up the process exit; nothing waits for a thread to be created when the first line arrives or leaves).
//! Lines are bounded ([`lines`](super::lines)) and every line the agent cannot read is answered
//! ([`frames`](super::frames)) while serving goes on: nothing on stdin ends the connection but its end. Once the
//! editor has closed its end of stdout, further frames are dropped quietly: the editor is gone, and the stdin EOF
//! that follows ends the connection cleanly instead of failing it with a broken pipe.
//!
//! Owns the process's stdin and stdout. Nothing else may write to stdout.

use std::future::Future;
use std::io::{self, BufRead, Write};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use agent_client_protocol::{Channel, ConnectTo, Error, Role, TransportFrame};
use futures::channel::mpsc::UnboundedSender;
use futures::future::{AbortHandle, Abortable, Either};
use futures::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use futures::{FutureExt, Stream, StreamExt};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::PollSender;

use super::early::{FirstLines, Handover};
use super::frames::{self, Routed};
use super::lines::LineReader;
use crate::config::Sources;

/// Frames waiting for the stdout thread; a full queue makes the agent wait (the editor is not reading).
const OUTGOING_FRAMES: usize = 256;
/// Chunks of stdin read ahead of the connection.
const INCOMING_CHUNKS: usize = 16;
/// The size of one read from stdin.
const CHUNK: usize = 64 * 1024;

/// stdout, written by a thread of its own that starts with the transport (so the first answer does not wait
/// for a thread to be created) and that turns a broken pipe into silence.
pub struct Outgoing {
    frames: PollSender<Vec<u8>>,
    /// Resolved when the thread has written everything and ended.
    done: Option<oneshot::Receiver<()>>,
    /// Why writing failed (other than a broken pipe), once it has.
    failed: Arc<Mutex<Option<io::ErrorKind>>>,
}

impl Outgoing {
    fn start() -> io::Result<Self> {
        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(OUTGOING_FRAMES);
        let (finished, done) = oneshot::channel();
        let failed = Arc::new(Mutex::new(None));
        let record = failed.clone();
        std::thread::Builder::new().name("tinycode-stdout".into()).spawn(move || {
            let mut gone = false;
            while let Some(frame) = rx.blocking_recv() {
                if gone {
                    continue;
                }
                let mut stdout = io::stdout().lock();
                match stdout.write_all(&frame).and_then(|()| stdout.flush()) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                        tracing::info!("the editor closed stdout; dropping further frames");
                        gone = true;
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "stdout failed");
                        *record.lock().unwrap_or_else(PoisonError::into_inner) = Some(e.kind());
                        gone = true;
                    }
                }
            }
            let _ = finished.send(());
        })?;
        Ok(Self { frames: PollSender::new(tx), done: Some(done), failed })
    }

    fn failure(&self) -> Option<io::Error> {
        self.failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map(|kind| io::Error::new(kind, "stdout failed"))
    }
}

impl AsyncWrite for Outgoing {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if let Some(e) = self.failure() {
            return Poll::Ready(Err(e));
        }
        let closed = || io::Error::new(io::ErrorKind::BrokenPipe, "the stdout thread ended");
        if std::task::ready!(self.frames.poll_reserve(cx)).is_err() {
            return Poll::Ready(Err(closed()));
        }
        match self.frames.send_item(buf.to_vec()) {
            Ok(()) => Poll::Ready(Ok(buf.len())),
            Err(_) => Poll::Ready(Err(closed())),
        }
    }

    /// Each frame is written and flushed by the thread as soon as it gets it.
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.failure().map_or(Ok(()), Err))
    }

    /// Wait until the thread has written every frame handed over.
    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.frames.close();
        if let Some(done) = self.done.as_mut() {
            let _ = std::task::ready!(Pin::new(done).poll(cx));
            self.done = None;
        }
        Poll::Ready(self.failure().map_or(Ok(()), Err))
    }
}

/// stdin, read by a thread of its own that starts with the transport, so the editor's first line is already
/// read when the connection starts. The thread blocks in `read` and never holds up the process's exit.
pub struct Incoming {
    chunks: mpsc::Receiver<io::Result<Vec<u8>>>,
    /// The rest of the chunk being handed out.
    pending: Vec<u8>,
    taken: usize,
}

impl Incoming {
    /// Start the thread. With `early`, the first line is answered when it is an `initialize`: at once, on the
    /// calling thread, when the editor has already sent it (no thread to wait for), else by the thread.
    fn start(early: Option<(Arc<Handover>, Sources)>) -> io::Result<Self> {
        let (tx, rx) = mpsc::channel(INCOMING_CHUNKS);
        let mut early = early.map(|(handover, sources)| FirstLines::new(handover, sources));
        // Reads land in a buffer that is not zeroed first: only the pages a read fills are ever touched.
        let mut stdin = io::BufReader::with_capacity(CHUNK, io::stdin());
        let mut pending = Vec::new();
        if let Some(first_lines) = early.as_mut()
            && readable_now()
            && let Ok(first) = stdin.fill_buf()
        {
            pending = first.to_vec();
            stdin.consume(pending.len());
            if !first_lines.read(&pending, write_early) {
                early = None;
            }
        }
        std::thread::Builder::new().name("tinycode-stdin".into()).spawn(move || {
            loop {
                let read = match stdin.fill_buf() {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    other => other.map(<[u8]>::to_vec),
                };
                stdin.consume(read.as_ref().map_or(0, Vec::len));
                if let (Some(first_lines), Ok(chunk)) = (early.as_mut(), &read)
                    && !first_lines.read(chunk, write_early)
                {
                    early = None;
                }
                let end = read.as_ref().is_ok_and(Vec::is_empty) || read.is_err();
                if end && let Some(first_lines) = early.take() {
                    first_lines.finish();
                }
                if tx.blocking_send(read).is_err() || end {
                    return;
                }
            }
        })?;
        Ok(Self { chunks: rx, pending, taken: 0 })
    }
}

/// Has the editor written to stdin already (or closed it)? Never waits.
fn readable_now() -> bool {
    let mut stdin = libc::pollfd { fd: libc::STDIN_FILENO, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid `pollfd` for the duration of the call, and a zero timeout.
    let ready = unsafe { libc::poll(&mut stdin, 1, 0) };
    ready == 1 && stdin.revents & (libc::POLLIN | libc::POLLHUP) != 0
}

impl AsyncRead for Incoming {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        if self.taken == self.pending.len() {
            match std::task::ready!(self.chunks.poll_recv(cx)) {
                Some(Ok(chunk)) => {
                    self.pending = chunk;
                    self.taken = 0;
                }
                Some(Err(e)) => return Poll::Ready(Err(e)),
                None => return Poll::Ready(Ok(0)),
            }
        }
        let n = buf.len().min(self.pending.len() - self.taken);
        let from = self.taken;
        buf[..n].copy_from_slice(&self.pending[from..from + n]);
        self.taken += n;
        Poll::Ready(Ok(n))
    }
}

/// Write an early answer (see [`early`](super::early)) on stdout, whole. Until the editor's second line has been
/// answered nothing else has been written there but the first early answer (the SDK's repeats are dropped).
fn write_early(answer: &[u8]) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(answer).and_then(|()| stdout.flush())
}

/// The process's stdin and stdout as one ACP transport, their threads started now. With `sources`, the editor's
/// `initialize` is answered as soon as it is read ([`early`](super::early)), from the user's configuration in
/// `sources`: before this returns when the editor has already written it, else by the stdin thread.
pub fn transport(sources: Option<Sources>) -> io::Result<Transport<Outgoing, Incoming>> {
    let handover = Arc::new(Handover::default());
    let early = sources.map(|sources| (handover.clone(), sources));
    // stdin first: the early answer is written before the stdout thread exists.
    let incoming = Incoming::start(early)?;
    let transport = Transport::new(Outgoing::start()?, incoming);
    Ok(transport.with_handover(handover))
}

/// Newline-delimited JSON-RPC over a pair of byte streams, with bounded lines and answers for unreadable ones.
pub struct Transport<W, R> {
    outgoing: W,
    incoming: R,
    /// What was answered before the SDK saw it (stdio only).
    handover: Option<Arc<Handover>>,
}

impl<W, R> Transport<W, R> {
    pub fn new(outgoing: W, incoming: R) -> Self {
        Self { outgoing, incoming, handover: None }
    }

    /// Hold back the SDK's own answer to a request answered early, and the lines after it until it has passed.
    pub fn with_handover(mut self, handover: Arc<Handover>) -> Self {
        self.handover = Some(handover);
        self
    }

    /// What was answered before the SDK saw it, for the agent's own `initialize` handler.
    pub fn handover(&self) -> Option<Arc<Handover>> {
        self.handover.clone()
    }
}

impl<W, R, Ro> ConnectTo<Ro> for Transport<W, R>
where
    W: AsyncWrite + Send + Unpin + 'static,
    R: AsyncRead + Send + Unpin + 'static,
    Ro: Role,
{
    async fn connect_to(self, peer: impl ConnectTo<Ro::Counterpart>) -> Result<(), Error> {
        let (ours, theirs) = Channel::duplex();
        let (from_peer, to_peer) = ours.into_parts();
        // Answers to unreadable lines join the peer's own frames in one queue, so they go out in order.
        let replies = theirs.tx.clone();
        let (stop_reading, registration) = AbortHandle::new_pair();
        let reading =
            Abortable::new(read_frames(self.incoming, to_peer, replies, self.handover.clone()), registration)
                .map(|read| read.unwrap_or(Ok(())));
        let writing = write_frames(from_peer, self.outgoing, self.handover);
        let io = Box::pin(futures::future::try_join(reading, writing));
        let peer = Box::pin(ConnectTo::<Ro>::connect_to(theirs, peer));
        match futures::future::select(peer, io).await {
            // The peer is done: send what it already handed over, without waiting for the editor's EOF.
            Either::Left((served, io)) => {
                stop_reading.abort();
                let written = io.await;
                served?;
                written.map(|_| ())
            }
            // stdin ended and everything was written: the peer is winding down.
            Either::Right((io, peer)) => {
                io?;
                peer.await
            }
        }
    }
}

/// Read lines until the end of the stream, sending each where [`frames::route`] says. After the first line,
/// when it was answered early, wait for the SDK's own answer to pass before reading on.
async fn read_frames<R: AsyncRead + Unpin>(
    incoming: R,
    to_peer: UnboundedSender<TransportFrame>,
    replies: UnboundedSender<TransportFrame>,
    mut handover: Option<Arc<Handover>>,
) -> Result<(), Error> {
    let mut lines = LineReader::new(BufReader::with_capacity(64 * 1024, incoming));
    while let Some(line) = lines.next().await.map_err(Error::into_internal_error)? {
        let sent = match frames::route(line) {
            Routed::Agent(frame) => to_peer.unbounded_send(frame),
            Routed::Editor(frame) => replies.unbounded_send(frame),
            Routed::Dropped => Ok(()),
        };
        if sent.is_err() {
            break;
        }
        if let Some(handover) = handover.take() {
            handover.passed().await;
        }
    }
    Ok(())
}

/// Write frames, one line each, until every sender is gone.
async fn write_frames<W: AsyncWrite + Unpin>(
    mut frames: impl Stream<Item = TransportFrame> + Unpin,
    mut outgoing: W,
    handover: Option<Arc<Handover>>,
) -> Result<(), Error> {
    while let Some(frame) = frames.next().await {
        if handover.as_ref().is_some_and(|h| h.is_repeat(&frame)) {
            continue;
        }
        let mut line = match frame.to_json() {
            Ok(line) => line,
            Err(e) => {
                tracing::error!(error = %e, "a frame could not be serialized; dropped");
                continue;
            }
        };
        line.push('\n');
        outgoing.write_all(line.as_bytes()).await.map_err(Error::into_internal_error)?;
        outgoing.flush().await.map_err(Error::into_internal_error)?;
    }
    outgoing.close().await.map_err(Error::into_internal_error)
}
