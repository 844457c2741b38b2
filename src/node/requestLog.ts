// The request log file (README.md "Configuration": REQUEST_LOG, REQUEST_LOG_MAX_LINES): one JSON line per request, rotated to `<path>.1`. Node only.
import { closeSync, createWriteStream, mkdirSync, openSync, readSync, renameSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import type { RequestLogRecord, RequestLogSink } from '../app.ts';

export interface RequestLogWriter extends RequestLogSink {
  /** Flushes what is buffered and closes the file (shutdown). */
  close(): Promise<void>;
}

/**
 * Lines already in the file, so a restart keeps counting towards the same rotation. Read in chunks:
 * the file may be large. A file that cannot be read counts 0; opening it for writing reports why.
 */
function countLines(path: string): number {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const buf = Buffer.allocUnsafe(64 * 1024);
    let lines = 0;
    for (let n: number; (n = readSync(fd, buf, 0, buf.length, null)) > 0; ) {
      for (let i = 0; i < n; i++) if (buf[i] === 10) lines++;
    }
    return lines;
  } catch {
    return 0;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

const FLUSH_MS = 50;
const FLUSH_BYTES = 64 * 1024;

/**
 * Opens (appending) the request log at `path`. When the file holds `maxLines` lines, the next record
 * first rotates it: the file is renamed to `<path>.1`, replacing the previous old file, so at most
 * maxLines × 2 lines are on disk. Writes are buffered by a stream over a descriptor opened
 * synchronously, so a rename never races an open: lines still buffered for the old descriptor land in
 * `<path>.1`, where they belong. A failing disk is reported once per failure and never fails a request.
 *
 * Lines are gathered for up to FLUSH_MS (or FLUSH_BYTES) and given to the stream as one write:
 * each stream write is a file write handed to libuv's thread pool and a wake-up back, which per
 * request (or per turn of the event loop) was 1.5–2% of the service's CPU under load
 * (docs/performance.md §4.3). Closing (the service's stop) and rotating write what is gathered
 * first; a process killed outright loses at most the last FLUSH_MS of lines.
 */
export function openRequestLog(path: string, maxLines: number, onError: (err: unknown) => void = () => {}): RequestLogWriter {
  mkdirSync(dirname(path), { recursive: true });
  let lines = countLines(path);
  let rotations = 0;
  let failing = false;
  let stream: WriteStream | null = null;
  /** Lines not yet given to the stream, and the timer that will give them. */
  let pending = '';
  let timer: ReturnType<typeof setTimeout> | null = null;

  const report = (err: unknown) => {
    if (!failing) onError(err);
    failing = true;
  };

  function open(): WriteStream | null {
    try {
      // 0o600: the log names clients' addresses and key ids; it is the operator's, not every local user's.
      const s = createWriteStream(path, { fd: openSync(path, 'a', 0o600) });
      s.on('error', (err) => {
        report(err);
        if (stream === s) stream = null;
      });
      return s;
    } catch (err) {
      report(err);
      return null;
    }
  }

  function flush(): void {
    if (timer) clearTimeout(timer);
    timer = null;
    if (pending === '') return;
    const text = pending;
    pending = '';
    stream ??= open();
    stream?.write(text);
  }

  function rotate(): void {
    flush();
    stream?.end();
    stream = null;
    try {
      renameSync(path, `${path}.1`);
    } catch (err) {
      report(err);
    }
    lines = 0;
    rotations++;
  }

  return {
    write(record: RequestLogRecord) {
      if (lines >= maxLines) rotate();
      stream ??= open();
      if (!stream) return;
      pending += `${JSON.stringify(record)}\n`;
      if (pending.length >= FLUSH_BYTES) flush();
      else if (!timer) {
        timer = setTimeout(flush, FLUSH_MS);
        // Nothing to keep the process alive for: stop() closes the log, which writes what is left.
        timer.unref?.();
      }
      lines++;
      failing = false;
    },
    stats: () => ({ lines, rotations }),
    close() {
      flush();
      const s = stream;
      stream = null;
      if (!s) return Promise.resolve();
      return new Promise<void>((resolve) => {
        s.once('close', () => resolve());
        s.once('error', () => resolve());
        s.end();
      });
    },
  };
}
