import FileIO
import Foundation

/// A tree's entries as one walk listed them, and the identity of its root folder then.
struct TreeListing: Sendable {
    let root: FileIdentity
    let entries: [TreeEntry]
}
