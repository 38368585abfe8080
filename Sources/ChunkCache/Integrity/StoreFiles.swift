import FileIO
import Foundation

/// The files a store keeps, as its bound counts them (<doc:Contract#12-A-bounded-cache>): every file in the store
/// directory and the folders below it (`data.mdb`, `lock.mdb`, the space `reserve`, the writers' leases,
/// `changes.signal`), except `tmp/`, whose hand-offs belong to the callers they were handed to. A file counts by the
/// disk it takes (`st_blocks` × 512), as `du` counts it; folders themselves are not counted.
enum StoreFiles {
    /// The folder of hand-offs, not counted.
    static let handOffFolder = "tmp"

    /// The disk the store's kept files take (`stat`'s `fileBytes`). Blocking (a `readdir` of the store
    /// directory and its few folders).
    static func diskBytes(of storePath: String) -> Int64 {
        var total: Int64 = 0
        try? FileSystem.forEachEntry(in: storePath) { entry in
            guard entry.name != handOffFolder else { return }
            total += diskBytes(at: storePath + "/" + entry.name)
        }
        return total
    }

    /// The disk a file takes, or, for a folder, the files below it; 0 for one that went meanwhile.
    private static func diskBytes(at path: String) -> Int64 {
        guard let st = try? FileSystem.status(path, symlinks: .doNotFollow) else { return 0 }
        guard st.st_mode & S_IFMT == S_IFDIR else { return Int64(st.st_blocks) * 512 }
        var total: Int64 = 0
        try? FileSystem.forEachEntry(in: path) { total += diskBytes(at: path + "/" + $0.name) }
        return total
    }
}
