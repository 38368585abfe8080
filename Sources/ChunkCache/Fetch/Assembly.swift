/// What writing or reading a plan's chunks came to: every chunk done, or, on an origin domain, a stored chunk
/// that failed its check (elsewhere that is `corruptData`, thrown). The fetch then has nothing to show: a
/// hand-off file or a clone is removed, and the chunk is downloaded again (``Absence/damaged(_:_:)``).
enum Assembly: Sendable, Equatable {
    case complete
    case damaged(DamagedChunk)
}
