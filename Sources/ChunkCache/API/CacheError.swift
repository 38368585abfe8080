import Foundation

/// The one error the engine throws.
///
/// Each ``Code`` carries the error domain and raw value the File Provider framework uses, and the CLI prints
/// them. A macOS extension hands ``systemError`` to the system: the same, except that the engine's own codes
/// (`ChunkCacheErrorDomain`) are wrapped as Cocoa 4101, as the framework requires (<doc:FileProviderRules#C1>).
/// Lower layers' errors (`LMDBError`, `ZstdError`, `Errno`) are kept as ``underlying``.
public struct CacheError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a stable code with its File Provider domain and raw value.
    public enum Code: Sendable, Hashable, CaseIterable {
        case noSuchItem
        case versionNoLongerAvailable
        case notAuthenticated
        case serverUnreachable
        case syncAnchorExpired
        case pageExpired
        case insufficientQuota
        case noPermission
        case fileExists
        case userCancelled
        case featureUnsupported
        case invalidArgument
        case corruptData
        case transient

        /// The stable code string, e.g. `noSuchItem`.
        public var name: String { String(describing: self) }

        /// The error domain the File Provider framework (or Cocoa) uses for this code.
        public var domain: String {
            switch self {
            case .noSuchItem, .versionNoLongerAvailable, .notAuthenticated, .serverUnreachable,
                .syncAnchorExpired, .pageExpired, .insufficientQuota:
                return CacheError.fileProviderDomain
            case .noPermission, .fileExists, .userCancelled, .featureUnsupported:
                return CacheError.cocoaDomain
            case .invalidArgument, .corruptData, .transient:
                return CacheError.chunkCacheDomain
            }
        }

        /// The raw value in ``domain``: Apple's values for the File Provider and Cocoa codes.
        public var rawValue: Int {
            switch self {
            case .noSuchItem: return -1005
            case .versionNoLongerAvailable: return -2009
            case .notAuthenticated: return -1000
            case .serverUnreachable: return -1004
            case .syncAnchorExpired, .pageExpired: return -1002
            case .insufficientQuota: return -1003
            case .noPermission: return 257
            case .fileExists: return 516
            case .userCancelled: return 3072
            case .featureUnsupported: return 3328
            case .invalidArgument: return 1
            case .corruptData: return 2
            case .transient: return 3
            }
        }
    }

    /// `NSFileProviderErrorDomain`.
    public static let fileProviderDomain = "NSFileProviderErrorDomain"
    /// `NSCocoaErrorDomain`.
    public static let cocoaDomain = "NSCocoaErrorDomain"
    /// The domain of the engine's own faults.
    public static let chunkCacheDomain = "ChunkCacheErrorDomain"

    /// The error's code.
    public var code: Code
    /// What is at fault (the item, version, range or path) and what to do about it.
    public var message: String
    /// The lower-level error behind this one, if any.
    public var underlying: (any Error & Sendable)?
    /// Where in the engine the error was raised.
    public var location: String

    /// Creates an error. `location` defaults to the caller's file and line.
    public init(
        _ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil,
        file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.location = "\(file):\(line)"
    }

    public var description: String { "\(code.name): \(message)" }

    /// The description with the underlying error and location, for logs.
    public func detailedDescription() -> String {
        var text = "\(code.name) (\(code.domain) \(code.rawValue)): \(message)"
        if let underlying { text += " [underlying: \(underlying)]" }
        return text + " [at \(location)]"
    }

    // MARK: - Bridging

    /// The error as the File Provider framework wants it: the code's domain and raw value, the message as
    /// `NSLocalizedDescriptionKey`, and any error from another domain under `NSUnderlyingErrorKey`
    /// (<doc:FileProviderRules#C1>).
    public var nsError: NSError {
        var info: [String: Any] = [NSLocalizedDescriptionKey: message]
        if let underlying { info[NSUnderlyingErrorKey] = underlying as NSError }
        return NSError(domain: code.domain, code: code.rawValue, userInfo: info)
    }

    /// The error as handed to the system (<doc:FileProviderRules#C1>): only Cocoa and File Provider domains pass; a
    /// `ChunkCacheErrorDomain` error is wrapped as Cocoa 4101 with the original as `NSUnderlyingErrorKey`.
    public var systemError: NSError {
        let error = nsError
        guard code.domain == CacheError.chunkCacheDomain else { return error }
        return NSError(
            domain: CacheError.cocoaDomain, code: CacheError.wrappedForSystemCode,
            userInfo: [NSLocalizedDescriptionKey: message, NSUnderlyingErrorKey: error])
    }

    /// The Cocoa code ``systemError`` wraps engine-only errors in (<doc:FileProviderRules#C1>).
    public static let wrappedForSystemCode = 4101
}

// MARK: - Bridging with `as NSError`

/// `error as NSError` on a thrown `CacheError` gives the code's own domain and raw value (File Provider,
/// Cocoa or `ChunkCacheErrorDomain`) and the message as its localized description, so a caller of the async
/// API can hand the system what it catches, as ``CacheError/nsError`` does.
///
/// Not `CustomNSError`: its domain is one static string per type, and swift-corelibs-foundation bridges a
/// `CustomNSError` with that static domain, whatever the instance; one type with three domains would
/// bridge every code to one of them. The bridge reads `_domain` and `_code` (the `Error` protocol's
/// bridging requirements) from the instance instead, on Linux and Darwin alike.
extension CacheError: LocalizedError {
    /// The code's error domain, read by `as NSError`.
    public var _domain: String { code.domain }
    /// The code's raw value, read by `as NSError`.
    public var _code: Int { code.rawValue }
    /// ``nsError``'s user info (the message and the underlying error), read by `as NSError` on Darwin;
    /// swift-corelibs-foundation takes ``errorDescription`` instead.
    public var _userInfo: AnyObject? { NSDictionary(dictionary: nsError.userInfo) }
    /// The message, as `NSLocalizedDescriptionKey`.
    public var errorDescription: String? { message }
}

extension CacheError.Code {
    /// Lets callers write `catch CacheError.Code.noSuchItem`.
    public static func ~= (pattern: CacheError.Code, value: any Error) -> Bool {
        (value as? CacheError)?.code == pattern
    }
}
