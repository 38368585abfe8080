import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SigV4

/// An S3 bucket (AWS, Ceph RGW, MinIO, moto) as an origin (CONTRACT §10): path-style requests signed with
/// SigV4, ranged `GetObject` pinned by `versionId` (versioned buckets) or `If-Match` (the ETag otherwise),
/// `HeadObject`, and `ListObjectsV2` over every page.
struct S3Origin: ReadingOrigin {
    let dialect: S3Dialect
    let reader: RangedReader

    init(
        endpoint: String, region: String, bucket: String, prefix: String, headers: [(name: String, value: String)],
        credentials: AWSCredentials?, policy: OriginPolicy
    ) {
        dialect = S3Dialect(
            endpoint: endpoint, bucket: bucket, prefix: prefix, headers: headers,
            signer: credentials.map { SigV4Signer(credentials: $0, region: region) })
        reader = RangedReader(client: HTTPClients.client(for: policy), dialect: dialect, policy: policy)
    }

    /// The keys below the prefix, a `ListObjectsV2` page at a time.
    func list(page: @Sendable ([RemoteEntry]) async throws -> Void) async throws {
        var token: String?
        repeat {
            var query = [("list-type", "2"), ("prefix", dialect.prefix)]
            if let token { query.append(("continuation-token", token)) }
            let response = try await reader.executeListing(
                { dialect.signed(method: .GET, path: "/" + dialect.bucket, query: query, extra: []) }, "the listing")
            let body = try await RangedReader.prefix(of: response.body, limit: 16 << 20)
            guard response.status == .ok else {
                throw dialect.failure(status: Int(response.status.code), body: body, item: "the listing")
                    ?? OriginFailure.transient(
                        detail: "\(dialect.host) answered \(response.status.code) for the listing")
            }
            let listing = S3Listing(xml: body)
            try await page(
                listing.entries.compactMap { entry in
                    guard entry.key.hasPrefix(dialect.prefix), entry.key.count > dialect.prefix.count else {
                        return nil
                    }
                    return RemoteEntry(
                        item: String(entry.key.dropFirst(dialect.prefix.count)), size: entry.size, version: entry.etag,
                        modificationDate: entry.lastModified)
                })
            let next = listing.isTruncated ? listing.nextToken : nil
            // A server that hands back the token it was given would list the same page forever.
            guard next == nil || next != token else {
                throw OriginFailure.invalidResponse(
                    detail:
                        "\(dialect.host) answered the listing with the continuation token it was sent; the origin's listing cannot go on"
                )
            }
            token = next
        } while token != nil
    }
}
