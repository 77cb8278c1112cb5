//! The stdio transport: stdin and stdout as ACP byte streams, read and written on `blocking`'s own threads (the
//! same as the SDK's `Stdio`, so a pending stdin read never holds up the process exit). Once the editor has
//! closed its end of stdout, further frames are dropped quietly: the editor is gone, and the stdin EOF that
//! follows ends the connection cleanly instead of failing it with a broken pipe.
//!
//! Owns the process's stdin and stdout. Nothing else may write to stdout.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use agent_client_protocol::ByteStreams;
use futures::io::AsyncWrite;

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
pub fn transport() -> ByteStreams<Outgoing, blocking::Unblock<io::Stdin>> {
    let outgoing = Outgoing { inner: blocking::Unblock::new(io::stdout()), gone: false };
    ByteStreams::new(outgoing, blocking::Unblock::new(io::stdin()))
}
