import OriginKit

extension CacheError {
    /// The error a fetch reports for an origin's failure, exactly as <doc:Contract#10-Origins-the-cold-path> maps them:
    /// `noSuchItem` only for a 404 or 410 of the item itself (<doc:FileProviderRules#C2>). `versionChanged` is mapped
    /// here only for strict fetches; a non-strict fetch moves on to the origin's new version instead.
    static func origin(_ failure: OriginFailure, item: String, domain: String, strict: Bool) -> CacheError {
        let what = "item \"\(item)\" at the origin of domain \"\(domain)\""
        switch failure {
        case .notFound(let status):
            return CacheError(
                .noSuchItem, "\(what) is gone (the origin answered \(status)); it was removed from the store")
        case .unauthorized:
            return CacheError(
                .notAuthenticated,
                "the origin refused the credentials for \(what) (401); set the right ones with `chunkcache domain set \(domain) --header …` or the AWS_* environment"
            )
        case .forbidden:
            return CacheError(.noPermission, "the origin forbids reading \(what) (403); check the credentials' rights")
        case .versionChanged:
            return CacheError(
                strict ? .versionNoLongerAvailable : .transient,
                "\(what) changed at the origin while it was read, so the version asked for is no longer there\(strict ? " (strict versioning); fetch without strict versioning to get the new version" : "; retry")"
            )
        case .unreachable(let detail):
            return CacheError(
                .serverUnreachable,
                "the origin of domain \"\(domain)\" cannot be reached (\(detail)); check the network and the origin URL, then retry"
            )
        case .transient(let detail):
            return CacheError(.transient, "reading \(what) failed after retries (\(detail)); retry later")
        case .invalidResponse(let detail):
            return CacheError(
                .transient,
                "the origin of domain \"\(domain)\" gave an answer that cannot be used for \(what) (\(detail)); check the origin URL, then retry"
            )
        }
    }
}
