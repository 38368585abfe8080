import FileIO
import Foundation

extension CacheError {
    /// A moving import of a directory on another filesystem than the store.
    static func otherFilesystem(_ root: String, store: String) -> CacheError {
        CacheError(
            .invalidArgument,
            "\(root) is on another filesystem than the store \(store), so it cannot be moved in at once; import it with --copy (it stays where it is: remove it yourself once imported), or move it onto the store's filesystem first"
        )
    }
}
