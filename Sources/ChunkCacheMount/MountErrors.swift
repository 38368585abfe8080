import ChunkCache
import FileIO

extension CacheError.Code {
    /// The `errno` a mount answers for the code (CONTRACT §13): a missing item is `ENOENT`, a refused
    /// process `EACCES`, an unreachable origin `ETIMEDOUT`, a full store `ENOSPC`, anything damaged or
    /// otherwise failed `EIO`.
    var errno: Errno {
        switch self {
        case .noSuchItem: return .noSuchFile
        case .noPermission, .notAuthenticated: return .permissionDenied
        case .serverUnreachable: return .timedOut
        case .insufficientQuota: return .noSpace
        case .userCancelled: return .interrupted
        case .invalidArgument: return .invalidArgument
        case .featureUnsupported: return .notSupported
        case .transient: return .tryAgain
        case .versionNoLongerAvailable, .corruptData, .syncAnchorExpired, .pageExpired, .fileExists: return .inputOutput
        }
    }
}

extension Error {
    /// The `errno` a mount answers for the error: a ``CacheError``'s code's, otherwise `EIO`.
    var mountErrno: Errno { (self as? CacheError)?.code.errno ?? .inputOutput }
}
