import CLMDB
import FileIO
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A named database inside an environment.
public struct Database: Sendable, Hashable {
    let dbi: MDB_dbi
}
