import FileIO
import Foundation

/// The store's directory and the files in it, which no import may read or remove.
///
/// Paths are compared after `realpath`, and identities (device and inode) on every folder and file of the
/// walk, so neither a symlinked path nor a bind mount of the store inside the tree slips through.
struct StoreFootprint {
    let path: String
    /// The store's folder.
    let directory: FileIdentity?
    /// The store's folder, its `tmp/`, `data.mdb` and `lock.mdb`.
    let identities: Set<FileIdentity>

    init(_ store: Store) {
        path = store.path
        directory = FileIdentity(ofPath: store.path)
        identities = Set(
            [store.path, store.tmpPath, store.path + "/data.mdb", store.path + "/lock.mdb"].compactMap {
                FileIdentity(ofPath: $0)
            })
    }

    /// Refuses a tree whose canonical path `root` contains the store or lies inside it.
    func refuse(root: String, identity: FileIdentity) throws(CacheError) {
        let rootPrefix = root.hasSuffix("/") ? root : root + "/"
        if root == path || path.hasPrefix(rootPrefix) || identity == directory {
            throw CacheError(
                .invalidArgument,
                "\(root) holds the store \(path): importing it would read the store into itself and then remove it; import a directory outside the store, or use another --store"
            )
        }
        if root.hasPrefix(path + "/") || identities.contains(identity) {
            throw CacheError(
                .invalidArgument, "\(root) is inside the store \(path); import a directory outside the store")
        }
    }

    /// Refuses an entry of the walk that is the store's folder or one of its files, whatever path leads there.
    func refuse(_ identity: FileIdentity, at entry: String, importing root: String) throws(CacheError) {
        guard identities.contains(identity) else { return }
        throw CacheError(
            .invalidArgument,
            "\(root) holds the store \(path) (as \(entry)): importing it would read the store into itself and then remove it; import a directory outside the store, or use another --store"
        )
    }
}
