//! The stdio transport: the editor's byte streams as JSON-RPC frames. stdin and stdout are read and written on
//! `blocking`'s own threads (as the SDK's `Stdio` does, so a pending stdin read never holds up the process exit).
//! Lines are bounded ([`lines`](super::lines)) and every line the agent cannot read is answered
//! ([`frames`](super::frames)) while serving goes on: nothing on stdin ends the connection but its end. Once the
//! editor has closed its end of stdout, further frames are dropped quietly: the editor is gone, and the stdin EOF
//! that follows ends the connection cleanly instead of failing it with a broken pipe.
//!
//! Owns the process's stdin and stdout. Nothing else may write to stdout.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use agent_client_protocol::{Channel, ConnectTo, Error, Role, TransportFrame};
use futures::channel::mpsc::UnboundedSender;
use futures::future::{AbortHandle, Abortable, Either};
use futures::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use futures::{FutureExt, Stream, StreamExt};

use super::frames::{self, Routed};
use super::lines::LineReader;

/// stdout that turns a broken pipe into silence.
pub struct Outgoing {
    inner: blocking::Unblock<io::Stdout>,
    gone: bool,
}

impl Outgoing {
    /// Treat a broken pipe as the reader having gone away; other results pass through.
    fn settle<T>(&mut self, result: io::Result<T>, quiet: T) -> io::Result<T> {
        match result {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                if !self.gone {
                    tracing::info!("the editor closed stdout; dropping further frames");
                }
                self.gone = true;
                Ok(quiet)
            }
            other => other,
        }
    }
}

impl AsyncWrite for Outgoing {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.gone {
            return Poll::Ready(Ok(buf.len()));
        }
        let result = std::task::ready!(Pin::new(&mut self.inner).poll_write(cx, buf));
        Poll::Ready(self.settle(result, buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.gone {
            return Poll::Ready(Ok(()));
        }
        let result = std::task::ready!(Pin::new(&mut self.inner).poll_flush(cx));
        Poll::Ready(self.settle(result, ()))
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.gone {
            return Poll::Ready(Ok(()));
        }
        let result = std::task::ready!(Pin::new(&mut self.inner).poll_close(cx));
        Poll::Ready(self.settle(result, ()))
    }
}

/// The process's stdin and stdout as one ACP transport.
pub fn transport() -> Transport<Outgoing, blocking::Unblock<io::Stdin>> {
    let outgoing = Outgoing { inner: blocking::Unblock::new(io::stdout()), gone: false };
    Transport::new(outgoing, blocking::Unblock::new(io::stdin()))
}

/// Newline-delimited JSON-RPC over a pair of byte streams, with bounded lines and answers for unreadable ones.
pub struct Transport<W, R> {
    outgoing: W,
    incoming: R,
}

impl<W, R> Transport<W, R> {
    pub fn new(outgoing: W, incoming: R) -> Self {
        Self { outgoing, incoming }
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
        let reading = Abortable::new(read_frames(self.incoming, to_peer, replies), registration)
            .map(|read| read.unwrap_or(Ok(())));
        let writing = write_frames(from_peer, self.outgoing);
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

/// Read lines until the end of the stream, sending each where [`frames::route`] says.
async fn read_frames<R: AsyncRead + Unpin>(
    incoming: R,
    to_peer: UnboundedSender<TransportFrame>,
    replies: UnboundedSender<TransportFrame>,
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
    }
    Ok(())
}

/// Write frames, one line each, until every sender is gone.
async fn write_frames<W: AsyncWrite + Unpin>(
    mut frames: impl Stream<Item = TransportFrame> + Unpin,
    mut outgoing: W,
) -> Result<(), Error> {
    while let Some(frame) = frames.next().await {
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
