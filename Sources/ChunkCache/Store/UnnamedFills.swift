import FileIO
import LMDBKit

/// Fill bytes that a committed transaction stopped naming but left on disk, for
/// ``WriteTransaction/releaseUnnamedFills(_:_:)`` to free after the commit.
struct UnnamedFills: Sendable {
    /// Each forgotten fill's place and length.
    var places: [(manifestID: UInt64, index: Int64, length: Int64)] = []
    /// Versions whose last fill went: their files go too.
    var versions: Set<UInt64> = []

    var isEmpty: Bool { places.isEmpty && versions.isEmpty }
}
