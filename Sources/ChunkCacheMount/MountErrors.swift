import ChunkCache

#if canImport(Glibc)
import Glibc
#endif

extension CacheError.Code {
    /// The `errno` a mount answers for the code (CONTRACT §13): a missing item is `ENOENT`, a refused
    /// process `EACCES`, an unreachable origin `ETIMEDOUT`, a full store `ENOSPC`, anything damaged or
    /// otherwise failed `EIO`.
    var errno: Int32 {
        switch self {
        case .noSuchItem: return ENOENT
        case .noPermission, .notAuthenticated: return EACCES
        case .serverUnreachable: return ETIMEDOUT
        case .insufficientQuota: return ENOSPC
        case .userCancelled: return EINTR
        case .invalidArgument: return EINVAL
        case .featureUnsupported: return EOPNOTSUPP
        case .transient: return EAGAIN
        case .versionNoLongerAvailable, .corruptData, .syncAnchorExpired, .pageExpired, .fileExists: return EIO
        }
    }
}

extension Error {
    /// The `errno` a mount answers for the error: a ``CacheError``'s code's, otherwise `EIO`.
    var mountErrno: Int32 { (self as? CacheError)?.code.errno ?? EIO }
}
