import FileIO
import Foundation

/// What a fetch on the cold path reads: the item, and the range asked for (nil: the whole file) with its
/// alignment.
struct ColdTarget: Sendable {
    let item: ItemIdentifier
    let minimal: ByteRange?
    let alignment: Int
}
