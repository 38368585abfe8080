import FileIO
import Foundation
import Synchronization

/// Runs a job each time a watched descriptor has input (the inotify descriptor of ``ChangeSignal``), with one
/// thread for all of them: `chunkcache-wait` sleeps in epoll (``ReadinessWaiter``) and runs the jobs of
/// readable descriptors itself. A job must be short and never block (a non-blocking drain, a wake-up): on
/// the ``BlockingPool`` it would wait behind bulk work (an ingest, a large fetch), and a wake-up that should
/// take microseconds took seconds under load.
///
/// A descriptor is reported once, then not again until its job has run: the job drains it, and only then is
/// it re-armed, so one job per descriptor runs at a time and none is queued for input already drained. A
/// watch's descriptor is closed by ``Watch/cancel()`` once no job of it is running, so a job never reads a
/// descriptor number that was closed and reused meanwhile.
final class InputWatches: Sendable {
    /// The watches of the engine.
    static let shared = InputWatches()

    /// What runs when a descriptor has input: short, and never blocking.
    typealias Job = @Sendable () -> Void

    /// A descriptor being watched; ``cancel()`` ends the watch.
    struct Watch: Sendable {
        fileprivate let token: UInt64
        fileprivate let owner: InputWatches

        /// Stops watching and closes the descriptor (after the job, when one is running).
        func cancel() { owner.cancel(token) }
    }

    private struct Entry {
        let file: FileDescriptor
        let job: Job
        let close: @Sendable () -> Void
        var running = false
        var cancelled = false
    }

    private struct State {
        /// Made, with the waiting thread, by the first watch.
        var waiter: ReadinessWaiter?
        var entries: [UInt64: Entry] = [:]
        var lastToken: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Runs `job` on the waiting thread each time `file` has input, until the watch is cancelled; `close` then closes `file`.
    /// - Throws: The errno of making the epoll instance or of adding `file` to it: the caller falls back to polling.
    func watch(
        _ file: FileDescriptor, close: @escaping @Sendable () -> Void, job: @escaping Job
    ) throws(Errno) -> Watch {
        let waiter = try startedWaiter()
        let token = state.withLock { state in
            state.lastToken += 1
            state.entries[state.lastToken] = Entry(file: file, job: job, close: close)
            return state.lastToken
        }
        do {
            try waiter.watch(file, token: token)
        } catch {
            _ = state.withLock { $0.entries.removeValue(forKey: token) }
            throw error
        }
        return Watch(token: token, owner: self)
    }

    private func startedWaiter() throws(Errno) -> ReadinessWaiter {
        try state.withLock { (state) throws(Errno) -> ReadinessWaiter in
            if let waiter = state.waiter { return waiter }
            let waiter = try ReadinessWaiter.make()
            state.waiter = waiter
            let thread = Thread { [self] in
                ThisProcess.nameCurrentThread("chunkcache-wait")
                waitForInput(waiter)
            }
            thread.start()
            return waiter
        }
    }

    private func waitForInput(_ waiter: ReadinessWaiter) {
        while true {
            let tokens: [UInt64]
            do {
                tokens = try waiter.wait()
            } catch {
                // Only a broken epoll instance fails here (EINTR is retried): stop rather than spin. Waiters
                // still check on their own every `ChangeSignal.watchedPoll`.
                Diagnostics.standardError.report(
                    "wait for input on watched descriptors (changes are noticed by polling instead)", error)
                return
            }
            for token in tokens { start(token) }
        }
    }

    /// Runs the job of a readable descriptor, unless its watch was cancelled meanwhile.
    private func start(_ token: UInt64) {
        let job = state.withLock { state -> Job? in
            guard state.entries[token]?.cancelled == false else { return nil }
            state.entries[token]!.running = true
            return state.entries[token]!.job
        }
        guard let job else { return }
        job()
        finished(token)
    }

    /// Re-arms the descriptor after its job, or closes it when the watch was cancelled while the job ran.
    private func finished(_ token: UInt64) {
        let close = state.withLock { state -> (@Sendable () -> Void)? in
            guard let entry = state.entries[token] else { return nil }
            if entry.cancelled {
                state.entries[token] = nil
                return entry.close
            }
            state.entries[token]!.running = false
            do {
                try state.waiter?.rearm(entry.file, token: token)
            } catch {
                Diagnostics.standardError.report(
                    "watch a descriptor for input again (changes are noticed by polling instead)", error)
            }
            return nil
        }
        close?()
    }

    private func cancel(_ token: UInt64) {
        let close = state.withLock { state -> (@Sendable () -> Void)? in
            guard let entry = state.entries[token] else { return nil }
            // Best effort: closing the descriptor below drops it from epoll anyway.
            try? state.waiter?.unwatch(entry.file)
            if entry.running {
                state.entries[token]!.cancelled = true
                return nil
            }
            state.entries[token] = nil
            return entry.close
        }
        close?()
    }
}
