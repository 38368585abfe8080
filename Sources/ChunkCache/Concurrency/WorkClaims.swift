import Synchronization

/// A range of indices handed out a few at a time to whichever thread asks next: the workers of one job share
/// its work out this way (``SharedWork/forEachIndex(below:on:threads:_:)``, a parallel fetch's chunks), so none
/// waits for a straggler with a fixed share.
///
/// What it guarantees:
/// - **Each index at most once.** Every ``next()`` returns claimed indices no other call returns; together
///   they cover the range, in order of the calls, until it is used up or stopped.
/// - **Stopping.** After ``stop()`` returns, `next()` returns nil everywhere: work claimed before goes on (its
///   holder checks on its own), nothing new is claimed. A stop does not wait for anyone.
/// - Any thread may call anything; nothing blocks. It orders nothing else: what the workers produce is passed
///   on by whatever waits for them (``SharedWork`` returns after every helper left).
///
/// A value, held inline by the type that shares it, so it costs no allocation of its own.
struct WorkClaims: ~Copyable, Sendable {
    private let nextIndex: Atomic<Int64>
    private let end: Int64
    private let size: Int64
    private let stopped = Atomic<Bool>(false)

    /// Claims of `size` (at least one) consecutive indices of `indices`.
    init(_ indices: Range<Int64>, size: Int64 = 1) {
        nextIndex = Atomic(indices.lowerBound)
        end = indices.upperBound
        self.size = max(1, size)
    }

    /// The next indices, at most `size` of them; nil when none are left or the claims were stopped.
    func next() -> Range<Int64>? {
        guard !stopped.load(ordering: .relaxed) else { return nil }
        let lower = nextIndex.wrappingAdd(size, ordering: .relaxed).oldValue
        return lower < end ? lower..<min(lower + size, end) : nil
    }

    /// No claim is handed out after this.
    func stop() { stopped.store(true, ordering: .relaxed) }
}
