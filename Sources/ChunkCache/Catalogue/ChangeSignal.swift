import FileIO
import Foundation
import Synchronization

/// Wakes every process waiting for a store's changes
/// (<doc:Contract#11-Catalogue,-enumeration,-changes-and-the-working-set>, <doc:FileProviderRules#E2>: the seed's
/// `signalEnumerator` after every domain-version bump): after each commit that bumps a domain's version, whether it
/// logged item changes or changed the domain's settings, the writer touches ``fileName`` in the store's folder. Waiters
/// watch the folder with inotify (``DirectoryWatch``) through ``InputWatches``, so no thread is held per store while
/// they wait; waiters of this process are woken directly as well. Where inotify is not available (or its limits are
/// reached), waiters fall back to polling every ``fallbackPoll``.
///
/// A wake-up says only that some domain of the store changed: waiters check their own domain again (its
/// change log, or its version).
///
/// What it guarantees: no wake-up is lost and each waiter wakes once per wake-up, waits at most a poll, and
/// stops at once when cancelled (``WakeUps``, which holds this process's waiters); only the writer queue
/// calls ``clearMark()`` and ``postIfMarked()``, around each transaction. A domain type: the coordination
/// is ``WakeUps`` and ``InputWatches``, in Concurrency/; what stays here is the store's signal file and its
/// inotify watch.
final class ChangeSignal: CommitSignal {
    /// The file each commit with a bump touches, in the store's folder: empty, it takes no space.
    static let fileName = "changes.signal"
    /// How often a waiter checks on its own when inotify is not available.
    static let fallbackPoll = Duration.milliseconds(100)
    /// How often a woken-less waiter checks anyway when it is: a net under a lost event, not the mechanism.
    /// One second; tests lengthen it to show that the signal alone wakes a waiter.
    let watchedPoll = Mutex(Duration.seconds(1))

    let marks: ChangeMarks
    private let folder: String
    /// Where a failed touch or watch is reported.
    private let diagnostics: Diagnostics
    private var path: String { folder + "/" + Self.fileName }

    /// This process's waiters; a touch by another process wakes them through ``InputWatches``.
    private let wakeUps = WakeUps()

    private struct State {
        var watch: InputWatches.Watch?
        var watching = false
        var watchFailed = false
    }

    private let state = Mutex(State())

    init(folder: String, marks: ChangeMarks, diagnostics: Diagnostics) {
        self.folder = folder
        self.diagnostics = diagnostics
        self.marks = marks
    }

    deinit {
        state.withLock { $0.watch?.cancel() }
    }

    // MARK: - The writer's side

    /// Clears the mark of a transaction that did not commit; called before each transaction.
    func clearMark() { _ = marks.take() }

    /// After a commit: when it bumped a domain's version, wakes every waiter, here and in other processes.
    func postIfMarked() {
        guard marks.take() else { return }
        do {
            try FileSystem.touch(path)
        } catch {
            diagnostics.report(
                "touch \(path) to wake the processes waiting for changes (they find them within \(watchedPoll.withLock { $0 }))",
                error)
        }
        wake()
    }

    // MARK: - The waiters' side

    /// The current wake-up count, read before a waiter checks for changes; starts watching the store's folder
    /// first, so a commit after the read wakes it.
    func generation() -> UInt64 {
        startWatching()
        return wakeUps.generation
    }

    /// Runs `check` now and after each wake-up until it finds something, `deadline` passes (then nil), or
    /// the task is cancelled (`userCancelled`, saying it was waiting for `what`).
    func wait<Found: Sendable>(
        for what: String, until deadline: ContinuousClock.Instant, _ check: () async throws -> Found?
    ) async throws -> Found? {
        while true {
            // Read before checking: a commit after the check moves it, and the wait below returns at once.
            let seen = generation()
            if let found = try await check() { return found }
            guard ContinuousClock.now < deadline else { return nil }
            await wait(after: seen, until: deadline)
            if Task.isCancelled { throw CacheError(.userCancelled, "waiting for \(what) was cancelled") }
        }
    }

    /// Waits until a wake-up after `seen` (``generation()``), `deadline`, or the task's cancellation; at
    /// most ``watchedPoll`` (``fallbackPoll`` without inotify). Holds no thread while it waits.
    func wait(after seen: UInt64, until deadline: ContinuousClock.Instant) async {
        let watched = state.withLock { $0.watching }
        let pause = min(deadline - .now, watched ? watchedPoll.withLock { $0 } : Self.fallbackPoll)
        await wakeUps.wait(after: seen, atMost: pause)
    }

    /// Wakes every waiter of this process.
    private func wake() { wakeUps.wake() }

    /// Watches the store's folder for touches of ``fileName`` by other processes, once; on failure waiters
    /// poll instead.
    private func startWatching() {
        let folder = self.folder
        state.withLock { state in
            guard !state.watching && !state.watchFailed else { return }
            let watch: DirectoryWatch
            do {
                watch = try DirectoryWatch.start(folder)
            } catch {
                state.watchFailed = true
                diagnostics.report(
                    "watch \(folder) for changes with inotify (waiters poll every \(Self.fallbackPoll) instead)", error)
                return
            }
            do {
                state.watch = try InputWatches.shared.watch(watch.descriptor, close: { watch.close() }) { [weak self] in
                    let names = (try? watch.drain()) ?? [Self.fileName]
                    if names.contains(Self.fileName) { self?.wake() }
                }
            } catch {
                watch.close()
                state.watchFailed = true
                diagnostics.report(
                    "wait for inotify events on \(folder) (waiters poll every \(Self.fallbackPoll) instead)", error)
                return
            }
            state.watching = true
        }
    }
}
