import Foundation

/// The authoritative remote copy of a domain's items (<doc:Contract#10-Origins-the-cold-path>): an HTTP(S) base URL or
/// an S3 bucket and prefix. Only the validating initializer makes one, so every `Origin` is well formed.
public struct Origin: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable { case http, s3 }

    public let kind: Kind
    /// `http[s]://host[:port]/base/` (the base always ends with `/`), or `s3://BUCKET/PREFIX` (a non-empty
    /// prefix always ends with `/`). An item's identifier is its path below it.
    public let url: String
    /// The S3 service's `http[s]://host[:port]`, without a trailing `/`; nil for an HTTP origin.
    public let endpoint: String?
    /// The S3 region requests are signed for; nil for an HTTP origin.
    public let region: String?

    public var description: String { url }

    /// The bucket of an S3 origin; nil for an HTTP origin.
    public var bucket: String? {
        guard kind == .s3 else { return nil }
        return String(url.dropFirst(Self.s3Scheme.count).prefix { $0 != "/" })
    }

    /// The key prefix of an S3 origin (empty or ending with `/`); nil for an HTTP origin.
    public var prefix: String? {
        guard kind == .s3, let bucket else { return nil }
        return String(url.dropFirst(Self.s3Scheme.count + bucket.count + 1))
    }

    static let s3Scheme = "s3://"
    static let maxURLLength = 2048

    /// Checks and normalizes an origin as the user gives it.
    ///
    /// - Parameters:
    ///   - url: `http[s]://host[:port]/base/` (a `/` is added to a base that lacks it), or `s3://BUCKET/PREFIX`.
    ///   - endpoint: For `s3://` only, and required there: the service's `http[s]://host[:port]`.
    ///   - region: For `s3://` only, and required there: the region to sign for, e.g. `us-east-1`.
    /// - Throws: `invalidArgument` naming the flag at fault and what to give.
    public init(_ url: String, endpoint: String? = nil, region: String? = nil) throws(CacheError) {
        guard url.utf8.count <= Self.maxURLLength else {
            throw CacheError(.invalidArgument, "--origin is longer than \(Self.maxURLLength) bytes; give a shorter URL")
        }
        if url.lowercased().hasPrefix(Self.s3Scheme) {
            guard let endpoint else {
                throw CacheError(
                    .invalidArgument,
                    "--origin \(Self.printable(url)) is an S3 origin: give --endpoint URL (e.g. https://s3.us-east-1.amazonaws.com) and --region R"
                )
            }
            guard let region else {
                throw CacheError(
                    .invalidArgument,
                    "--origin \(Self.printable(url)) is an S3 origin: give --region R (e.g. us-east-1)")
            }
            let rest = url.dropFirst(Self.s3Scheme.count)
            let bucket = String(rest.prefix { $0 != "/" })
            var prefix = String(rest.dropFirst(bucket.count + 1))
            guard (1...255).contains(bucket.utf8.count),
                bucket.unicodeScalars.allSatisfy({ $0.isASCIIAlphanumeric || "._-".unicodeScalars.contains($0) })
            else {
                throw CacheError(
                    .invalidArgument,
                    "--origin \(Self.printable(url)) names no valid bucket: give s3://BUCKET/PREFIX, the bucket 1 to 255 letters, digits, '.', '-' or '_'"
                )
            }
            guard !prefix.hasPrefix("/"), prefix.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7f })
            else {
                throw CacheError(
                    .invalidArgument,
                    "--origin \(Self.printable(url)) has a prefix that starts with '/' or holds spaces or control characters; give s3://BUCKET/PREFIX"
                )
            }
            if !prefix.isEmpty && !prefix.hasSuffix("/") { prefix += "/" }
            let endpointBase = try Self.httpBase(endpoint, flag: "--endpoint", pathAllowed: false)
            guard (1...64).contains(region.utf8.count),
                region.unicodeScalars.allSatisfy({ $0.isASCIIAlphanumeric || "-_".unicodeScalars.contains($0) })
            else {
                throw CacheError(
                    .invalidArgument,
                    "--region \(Self.printable(region)) is not a region name: give 1 to 64 letters, digits, '-' or '_', e.g. us-east-1"
                )
            }
            kind = .s3
            self.url = Self.s3Scheme + bucket + "/" + prefix
            self.endpoint = String(endpointBase.dropLast())
            self.region = region
        } else {
            if endpoint != nil || region != nil {
                throw CacheError(
                    .invalidArgument,
                    "--\(endpoint != nil ? "endpoint" : "region") applies to s3:// origins only; drop it, or give --origin s3://BUCKET/PREFIX"
                )
            }
            kind = .http
            self.url = try Self.httpBase(url, flag: "--origin", pathAllowed: true)
            self.endpoint = nil
            self.region = nil
        }
    }

    /// `url` as `scheme://host[:port]/path/`, or `invalidArgument` naming `flag`. User names and passwords
    /// are refused: a URL is printed, so credentials go in headers (or the AWS environment) instead.
    private static func httpBase(_ url: String, flag: String, pathAllowed: Bool) throws(CacheError) -> String {
        let shown = printable(url)
        let what = pathAllowed ? "http[s]://host[:port]/base/" : "http[s]://host[:port]"
        guard url.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7f }),
            let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else {
            throw CacheError(.invalidArgument, "\(flag) \(shown) is not an http:// or https:// URL; give \(what)")
        }
        guard components.user == nil, components.password == nil else {
            throw CacheError(
                .invalidArgument,
                "\(flag) holds a user name or password, which would be printed; give \(what) and put credentials in --header (or the AWS_* environment for S3)"
            )
        }
        guard components.query == nil, components.fragment == nil else {
            throw CacheError(.invalidArgument, "\(flag) \(shown) has a query or fragment; give \(what)")
        }
        if let port = components.port, !(1...65535).contains(port) {
            throw CacheError(.invalidArgument, "\(flag) \(shown) has port \(port), outside 1…65535; give \(what)")
        }
        guard pathAllowed || components.path.isEmpty || components.path == "/" else {
            throw CacheError(
                .invalidArgument,
                "\(flag) \(shown) has a path; give \(what) (the bucket goes in --origin s3://BUCKET/PREFIX)")
        }
        // The scheme is case-insensitive; the rest is kept as given, so the URL prints as the user wrote it.
        var base = scheme + url.dropFirst(scheme.count)
        if !base.hasSuffix("/") { base += "/" }
        return base
    }

    /// A value quoted for a message: at most 200 characters, so a huge argument does not flood the terminal,
    /// and a user name or password before an `@` in the authority shown as `…` (it may be a credential).
    private static func printable(_ value: String) -> String {
        var shown = value
        if let scheme = shown.range(of: "://") {
            let authority = shown[scheme.upperBound...].prefix { $0 != "/" }
            if let at = authority.lastIndex(of: "@") { shown.replaceSubrange(authority.startIndex..<at, with: "…") }
        }
        return "\"\(shown.prefix(200))\(shown.count > 200 ? "…" : "")\""
    }
}

extension Unicode.Scalar {
    var isASCIIAlphanumeric: Bool {
        ("a"..."z").contains(self) || ("A"..."Z").contains(self) || ("0"..."9").contains(self)
    }
}
