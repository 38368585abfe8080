import FileIO
import Foundation
import OriginKit
import Synchronization

/// How a download's chunks go into the store.
enum SinkMode: Sendable {
    /// As fills (``FillFiles``): served and written as they arrive, settled later
    /// (<doc:Contract#10-Origins-the-cold-path>). Absent entries only.
    case fill
    /// As fills over a fill whose bytes failed their check (or absent entries).
    case refill
    /// Hashed, checked against the digest and compressed now, overwriting a stored chunk that failed its
    /// check: the digest is known and the chunk is already named, so there is nothing to settle.
    case replaceStored
}
