import Foundation

/// A domain as `domains()` lists it: its origin settings and what the store holds of it. Header values are
/// credentials, so only their names are here.
public struct DomainInfo: Sendable, Hashable {
    public var name: String
    public var origin: Origin?
    /// The names of the headers sent to the origin, in the order given.
    public var headerNames: [String]
    public var pipelineDepth: Int
    public var readAhead: Int64
    /// How long an origin request may send nothing before it fails `serverUnreachable` (a mounted read:
    /// `ETIMEDOUT`): one bounded wait per read.
    public var readTimeout: Duration = DomainInfo.defaultReadTimeout
    public var domainVersion: DomainVersion
    /// Items of every kind (files, folders, symlinks).
    public var items: Int
    /// Bytes of the domain's versions the store holds (zero chunks count as held).
    public var cachedBytes: Int64
    /// False while an import or reimport of the domain is under way (or interrupted, until resumed).
    public var importFinished: Bool
    /// How much of the change log is kept.
    public var changeHistory: ChangeHistory
    /// How many imports and reimports of the domain finished: `importDidFinish` is recorded once per
    /// import epoch, also when a reimport joined an import under way (<doc:FileProviderRules#G4>).
    public var importsFinished: Int = 0

    /// Origin requests in flight per domain per process, unless set.
    public static let defaultPipelineDepth = 8
    public static let pipelineDepthRange = 1...128
    /// The largest sequential read-ahead window, unless set.
    public static let defaultReadAhead: Int64 = 4 << 20
    public static let readAheadRange: ClosedRange<Int64> = 0...(1 << 30)
    public static let maxHeaders = 64
    /// The read timeout unless set: <doc:Contract#10-Origins-the-cold-path>'s idle timeout.
    public static let defaultReadTimeout: Duration = .seconds(30)
    /// Read timeouts allowed, in seconds.
    public static let readTimeoutRange: ClosedRange<Double> = 0.1...3600

    /// Checks the settings given (nil ones are not checked), as `addDomain` and `setDomain` do.
    /// - Throws: `invalidArgument` naming the flag at fault and what to give.
    public static func validate(
        pipelineDepth: Int?, readAhead: Int64?, readTimeout: Duration? = nil, headerCount: Int
    ) throws(CacheError) {
        if let readTimeout, !readTimeoutRange.contains(readTimeout.seconds) {
            throw CacheError(
                .invalidArgument,
                "--read-timeout \(readTimeout.seconds)s is outside 0.1s…1h; give how long a read may wait for the origin, e.g. 10s"
            )
        }
        if let pipelineDepth, !pipelineDepthRange.contains(pipelineDepth) {
            throw CacheError(
                .invalidArgument,
                "--pipeline-depth \(pipelineDepth) is outside 1…128; give the number of origin requests to keep in flight"
            )
        }
        if let readAhead, !readAheadRange.contains(readAhead) {
            throw CacheError(
                .invalidArgument,
                "--read-ahead \(readAhead) is outside 0…1GiB; give a size such as 4MiB (0 turns read-ahead off)")
        }
        guard headerCount <= maxHeaders else {
            throw CacheError(
                .invalidArgument, "\(headerCount) --header options are more than \(maxHeaders); give fewer")
        }
    }
}

extension Duration {
    /// The duration in seconds.
    public var seconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) / 1e18
    }
}
