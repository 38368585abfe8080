import CLMDB

#if canImport(Glibc)
import Glibc
#endif

/// An error code returned by an LMDB function: an `MDB_…` code or an `errno` value.
public struct LMDBError: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The raw code, as returned by the C function.
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// `MDB_NOTFOUND`: key/data pair not found.
    public static let notFound = LMDBError(rawValue: MDB_NOTFOUND)
    /// `MDB_KEYEXIST`: key/data pair already exists.
    public static let keyExists = LMDBError(rawValue: MDB_KEYEXIST)
    /// `MDB_MAP_FULL`: the environment's map size is reached.
    public static let mapFull = LMDBError(rawValue: MDB_MAP_FULL)
    /// `MDB_DBS_FULL`: too many named databases.
    public static let databasesFull = LMDBError(rawValue: MDB_DBS_FULL)
    /// `MDB_READERS_FULL`: the reader lock table is full.
    public static let readersFull = LMDBError(rawValue: MDB_READERS_FULL)
    /// `MDB_TXN_FULL`: the transaction has too many dirty pages.
    public static let transactionFull = LMDBError(rawValue: MDB_TXN_FULL)
    /// `MDB_MAP_RESIZED`: another process grew the map beyond this one's size.
    public static let mapResized = LMDBError(rawValue: MDB_MAP_RESIZED)
    /// `MDB_CORRUPTED`: a located page has the wrong type.
    public static let corrupted = LMDBError(rawValue: MDB_CORRUPTED)
    /// `MDB_PAGE_NOTFOUND`: a requested page is not there, the file is damaged or truncated.
    public static let pageNotFound = LMDBError(rawValue: MDB_PAGE_NOTFOUND)
    /// `MDB_INVALID`: the file is not an LMDB file.
    public static let invalid = LMDBError(rawValue: MDB_INVALID)
    /// `MDB_VERSION_MISMATCH`: the environment was written by another LMDB version.
    public static let versionMismatch = LMDBError(rawValue: MDB_VERSION_MISMATCH)
    /// `MDB_PANIC`: a fatal error, the environment must be closed.
    public static let panic = LMDBError(rawValue: MDB_PANIC)
    /// `MDB_BAD_TXN`: the transaction must abort or is already finished.
    public static let badTransaction = LMDBError(rawValue: MDB_BAD_TXN)
    /// `ENOSPC`: the disk is full.
    public static let noSpace = LMDBError(rawValue: ENOSPC)
    /// `EIO`: an I/O error; LMDB also returns it for a short write, as on a full disk.
    public static let ioError = LMDBError(rawValue: EIO)
    /// `EACCES`: permission denied.
    public static let accessDenied = LMDBError(rawValue: EACCES)
    /// `ENOENT`: the directory does not exist.
    public static let noSuchFile = LMDBError(rawValue: ENOENT)
    /// `EROFS`: read-only filesystem.
    public static let readOnlyFilesystem = LMDBError(rawValue: EROFS)
    /// `ENOMEM`: out of memory, as when `mdb_env_create` cannot allocate.
    public static let outOfMemory = LMDBError(rawValue: ENOMEM)
    /// `EBUSY`: the environment is in use by another holder in this process, so it cannot be resized.
    public static let busy = LMDBError(rawValue: EBUSY)

    /// True when the error says the file is not a sound LMDB environment.
    public var isCorruption: Bool {
        self == .corrupted || self == .invalid || self == .versionMismatch || self == .panic || self == .pageNotFound
    }

    /// True when the store ran out of room: the map or the disk is full.
    public var isOutOfSpace: Bool {
        self == .mapFull || self == .noSpace || self == .transactionFull
    }

    /// The text of `mdb_strerror`.
    public var description: String { String(cString: mdb_strerror(rawValue)) + " (\(rawValue))" }

    public static func ~= (pattern: LMDBError, value: any Error) -> Bool {
        (value as? LMDBError) == pattern
    }
}

/// Turns an LMDB return code into a thrown error.
@inline(__always)
func check(_ code: Int32) throws(LMDBError) {
    if code != 0 { throw LMDBError(rawValue: code) }
}
