import FileIO
import Foundation
import OriginKit
import Synchronization

/// A downloaded chunk whose SHA-256 is not the hash its manifest holds (<doc:Contract#10-Origins-the-cold-path>
/// "Integrity").
struct ChunkMismatch: Error {
    let index: Int64
    let expected: ChunkDigest
    let actual: ChunkDigest?
}
