import Foundation
import Synchronization

/// This process's trace sessions (<doc:Contract#15-Learned-prefetch>): for each opener, the run it makes in the
/// first seconds after its first open, and the prefetches its opens start.
///
/// - An opener's first open starts a session whose leader is the item it opened, and starts the prefetch of
///   the leader's trace. Each later open in the session that names an item with a trace of its own starts that
///   one too (a program that opens a large file late in its start).
/// - Reads in the session's ``window`` are its run. When the window ends (or ``finishAll(_:)``), the run is
///   merged into the leader's trace in one write, with the bytes its prefetches downloaded and, of those, the
///   bytes it then read (`stat`'s `prefetchedBytes`, `prefetchHitBytes`).
///
/// Nothing here blocks a caller: opens and reads take a lock for a dictionary update; the store is read and
/// written by tasks (LMDB on the blocking pool, through the writer).
final class TraceSessions: Sendable {
    private let state = Mutex<State>(State())
    /// Sessions open: a fetch that finds none notes nothing, without the lock.
    private let open = Atomic<Int>(0)

    private struct State {
        var sessions: [TraceOpener: Session] = [:]
        /// Sessions whose window ended, until their prefetches finish and their run is saved.
        var closing: [UInt64: Session] = [:]
        var nextID: UInt64 = 0

        /// Runs `change` on `opener`'s session `id` (any session of `opener` when nil), open or closing, in
        /// place: a copy taken out and put back would copy its extent lists on every read.
        mutating func withSession<R>(
            _ opener: TraceOpener, id: UInt64? = nil, _ change: (inout Session) -> R
        ) -> R? {
            if let index = sessions.index(forKey: opener), id == nil || sessions.values[index].id == id {
                return change(&sessions.values[index])
            }
            guard let id, closing[id] != nil else { return nil }
            return change(&closing[id]!)
        }
    }

    /// One opener's run under way.
    struct Session: Sendable {
        let id: UInt64
        let domain: String
        let startedAt: ContinuousClock.Instant
        var run: TraceRun
        /// Items the session's prefetches predicted, and those their traces named that are no longer files.
        var predicted: Set<String> = []
        var gone: Set<String> = []
        /// Items whose own trace has been looked up.
        var looked: Set<String> = []
        /// What the prefetches downloaded, by item, and every read exactly (the run's extents are bounded):
        /// their overlap is the prefetch's hit.
        var prefetched: [String: [TraceExtent]] = [:]
        var exactReads: [String: [TraceExtent]] = [:]
        var exactCount = 0
        /// Off when the domain has no origin or learned prefetch is off for it: nothing is saved.
        var learns = true
        /// The trace lookups started for the run's opens: what they find is in `predicted` once they end.
        var lookups: [Task<[ChunkCache.PrefetchTarget], Never>] = []
        var prefetches: [Task<Void, Never>] = []
        var ender: Task<Void, Never>?
    }

    /// Exact reads kept per session for the hit count; past it reads count only toward the trace.
    static let maxExactReads = 100_000
    /// Sessions open at once: past it a new opener is not traced (a storm of short processes costs no memory).
    static let maxSessions = 4096

    /// How long after its first open an opener's reads are its run.
    static let window: Duration = .seconds(30)

    /// Whether any session is open: when not, a read has nothing to note.
    var isOpen: Bool { open.load(ordering: .relaxed) > 0 }

    /// Notes that `opener` opened `item` (<doc:Contract#15-Learned-prefetch>); starts a session, or joins the
    /// opener's, and the prefetch of the item's trace when it has one.
    func opened(_ item: ItemIdentifier, by opener: TraceOpener, cache: ChunkCache) {
        enum Start {
            case session(UInt64, ended: Session?)
            case lookup(UInt64)
            case none
        }
        let now = ContinuousClock.now
        let start: Start = state.withLock { state in
            var ended: Session?
            let joined = state.withSession(opener) { session -> Start? in
                guard session.domain == item.domain, now - session.startedAt < Self.window else { return nil }
                guard session.looked.insert(item.rawValue).inserted, !session.predicted.contains(item.rawValue),
                    session.learns
                else { return Start.none }
                return .lookup(session.id)
            }
            if let joined, let joined { return joined }
            if let session = state.sessions.removeValue(forKey: opener) {
                ended = session
                state.closing[session.id] = session
            } else if state.sessions.count >= Self.maxSessions {
                return .none
            }
            state.nextID += 1
            var session = Session(
                id: state.nextID, domain: item.domain, startedAt: now, run: TraceRun(leader: item.rawValue))
            session.looked.insert(item.rawValue)
            state.sessions[opener] = session
            return .session(state.nextID, ended: ended)
        }
        switch start {
        case .none: return
        case .lookup(let id):
            startPrefetch(of: item, for: opener, session: id, cache: cache)
        case .session(let id, let ended):
            if ended == nil { open.add(1, ordering: .relaxed) }
            if let ended {
                ended.ender?.cancel()
                Task { await self.save(ended, cache: cache) }
            }
            startPrefetch(of: item, for: opener, session: id, cache: cache)
            // Weak: a session keeps no store open once its caller let it go (what it learned is then lost).
            let ender = Task { [weak cache] in
                try? await Task.sleep(for: Self.window)
                guard !Task.isCancelled, let cache else { return }
                await self.end(opener, session: id, cache: cache)
            }
            update(opener, id) { $0.ender = ender }
        }
    }

    /// Notes that `opener` read `range` of `item`, when its session is open and in its window.
    func read(_ item: ItemIdentifier, _ range: TraceExtent, by opener: TraceOpener) {
        guard isOpen, range.offset >= 0, range.length > 0 else { return }
        let range = TraceExtent(offset: range.offset, length: min(range.length, Int64.max - range.offset))
        let now = ContinuousClock.now
        state.withLock { state in
            _ = state.withSession(opener) { session in
                guard session.domain == item.domain, now - session.startedAt < Self.window else { return }
                session.run.note(item.rawValue, range)
                if session.exactCount < Self.maxExactReads {
                    Self.append(range, to: &session.exactReads[item.rawValue, default: []])
                    session.exactCount += 1
                }
            }
        }
    }

    /// Ends every session now and saves what each learned, after its prefetches finish: before a mount
    /// unmounts or a process exits.
    func finishAll(_ cache: ChunkCache) async {
        let sessions = state.withLock { state in
            defer { state.sessions.removeAll() }
            for session in state.sessions.values { state.closing[session.id] = session }
            return Array(state.sessions.values)
        }
        open.subtract(sessions.count, ordering: .relaxed)
        for session in sessions {
            session.ender?.cancel()
            await save(session, cache: cache)
        }
    }

    /// Ends `opener`'s session `id` when its window is over, unless it ended already.
    private func end(_ opener: TraceOpener, session id: UInt64, cache: ChunkCache) async {
        let session = state.withLock { state -> Session? in
            guard state.sessions[opener]?.id == id else { return nil }
            state.closing[id] = state.sessions[opener]
            return state.sessions.removeValue(forKey: opener)
        }
        guard let session else { return }
        open.subtract(1, ordering: .relaxed)
        await save(session, cache: cache)
    }

    /// Waits for the session's prefetches, then merges its run into its leader's trace and counts what its
    /// prefetches downloaded and what of it was read. A failure loses only this run's lesson.
    private func save(_ session: Session, cache: ChunkCache) async {
        // The prefetches started before the session closed, as the closing session lists them.
        let prefetches = state.withLock { $0.closing[session.id]?.prefetches } ?? session.prefetches
        for prefetch in prefetches { await prefetch.value }
        // The prefetches' downloads landed in the closing session while they ran: take its latest state.
        let final = state.withLock { $0.closing.removeValue(forKey: session.id) } ?? session
        var prefetched: Int64 = 0
        var hits: Int64 = 0
        for (item, extents) in final.prefetched {
            prefetched += TraceExtents.bytes(extents)
            hits += TraceExtents.overlap(extents, final.exactReads[item] ?? [])
        }
        guard final.learns, !final.run.isEmpty || prefetched > 0 else { return }
        try? await cache.saveRun(
            final.run, in: final.domain, predicted: final.predicted, gone: final.gone, prefetched: prefetched,
            hits: hits)
    }

    /// Looks up `item`'s trace and prefetches what it predicts, noting what it downloads in session `id`.
    private func startPrefetch(of item: ItemIdentifier, for opener: TraceOpener, session id: UInt64, cache: ChunkCache)
    {
        let lookup = Task(priority: .utility) {
            await cache.traceTargets(
                of: item,
                predicting: { predicted, gone in
                    self.update(opener, id) {
                        $0.predicted.formUnion(predicted)
                        $0.gone.formUnion(gone)
                    }
                },
                disabled: { self.update(opener, id) { $0.learns = false } })
        }
        let task = Task(priority: .utility) {
            await cache.prefetch(await lookup.value, of: item) { member, count, offset in
                self.update(opener, id) {
                    Self.append(
                        TraceExtent(offset: offset, length: Int64(count)), to: &$0.prefetched[member, default: []])
                }
            }
        }
        update(opener, id) {
            $0.lookups.append(lookup)
            $0.prefetches.append(task)
        }
    }

    /// Whether a trace the opener's run looked up predicts `item`, once every lookup started so far has
    /// ended; false when the opener has no run.
    func predicts(_ item: ItemIdentifier, by opener: TraceOpener) async -> Bool {
        let lookups = state.withLock { state in
            state.withSession(opener) { $0.domain == item.domain ? $0.lookups : [] }
        }
        guard let lookups, !lookups.isEmpty else { return false }
        for lookup in lookups { _ = await lookup.value }
        return state.withLock { state in
            state.withSession(opener) { $0.predicted.contains(item.rawValue) } ?? false
        }
    }

    private func update(_ opener: TraceOpener, _ id: UInt64, _ change: (inout Session) -> Void) {
        state.withLock { _ = $0.withSession(opener, id: id, change) }
    }

    /// Appends `range`, joined to the last extent when it continues it (a stream of receives or reads).
    private static func append(_ range: TraceExtent, to extents: inout [TraceExtent]) {
        if let last = extents.last, last.end == range.offset {
            extents[extents.count - 1].length += range.length
        } else {
            extents.append(range)
        }
    }
}
