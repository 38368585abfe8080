import Foundation
import Synchronization

/// The `Progress` a completion-handler fetch returns, counted in bytes of the retrieved range: determinate
/// from the start, its total the range's length as the fetch knows it when it starts
/// (``ChunkCache/expectedRange(_:minimal:alignment:)``) and set again, before any byte is
/// counted, when the plan or the origin's first answer tells the exact range. The completed count follows the
/// bytes of that range downloaded for the fetch, never those of the read-ahead downloaded with them, never
/// past the total and never backwards, and equals the total when the file is returned (bytes the store
/// already held count then: assembling them is local and brief, downloading is what takes time).
final class FetchProgress: Sendable {
    /// The range counted, and how many of its bytes arrived; unit counts are set under this lock, so
    /// concurrent downloads never move them backwards.
    private let state = Mutex<(range: ByteRange?, arrived: Int64)>((nil, 0))
    nonisolated(unsafe) let progress: Progress

    /// A progress whose total is `range`'s length; indeterminate (-1) when the range is not known yet.
    init(expecting range: ByteRange?) {
        progress = Progress(totalUnitCount: range?.length ?? -1)
        state.withLock { $0.range = range }
    }

    /// The retrieved range is `range`.
    func expect(_ range: ByteRange) {
        state.withLock { state in
            guard state.range != range else { return }
            state.range = range
            progress.totalUnitCount = range.length
            // A range that shrank (the origin's file is shorter than the request) caps what was counted.
            state.arrived = min(state.arrived, range.length)
            if progress.completedUnitCount > range.length { progress.completedUnitCount = range.length }
        }
    }

    /// `count` bytes from `offset` on have been downloaded; only those inside the range count.
    func downloaded(_ count: Int, at offset: Int64) {
        state.withLock { state in
            guard let range = state.range else { return }
            let inside = min(range.end, offset + Int64(count)) - max(range.location, offset)
            guard inside > 0 else { return }
            state.arrived = min(range.length, state.arrived + inside)
            if state.arrived > progress.completedUnitCount { progress.completedUnitCount = state.arrived }
        }
    }

    /// The fetch returned a file holding `length` bytes; what its read-ahead still downloads counts no more.
    func finish(_ length: Int64) {
        state.withLock { state in
            state = (nil, length)
            progress.totalUnitCount = length
            progress.completedUnitCount = length
        }
    }
}
