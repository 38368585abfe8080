/// What keeps the store within its bound around the writer's commits (<doc:Contract#12-A-bounded-cache>): the engine's
/// space bound, bound to the writer when the store opens. Each is called on the writer queue.
protocol WriteBound: AnyObject, Sendable {
    /// Makes room for about `bytes` before a write (by eviction, unless `evicting` is false), or throws
    /// `insufficientQuota` naming `what` before anything is written.
    @available(*, noasync)
    func makeRoom(for bytes: Int64, doing what: String, evicting: Bool) throws
    /// Makes room for `bytes` once more after LMDB found its map full though the live pages left room.
    @available(*, noasync)
    func makeRoomAfterMapFull(for bytes: Int64, doing what: String) throws
    /// After each commit that may evict: queues an eviction when the store is past its high-water mark.
    @available(*, noasync)
    func afterCommit()
}
