import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SigV4

/// An origin whose reads and probes are a ``RangedReader``'s: HTTP and S3 differ in their dialect only.
protocol ReadingOrigin: RemoteOrigin {
    var reader: RangedReader { get }
}

extension ReadingOrigin {
    func read(
        _ item: String, range: Range<Int64>, version: String?,
        object: @Sendable (RemoteObject) async throws -> Void,
        deliver: @Sendable (Int64, RemoteBytes) async throws -> Void
    ) async throws {
        try await reader.read(item, range: range, version: version, object: object, deliver: deliver)
    }

    func head(_ item: String, version: String?) async throws -> RemoteObject {
        try await reader.head(item, version: version)
    }

    func addresses(_ version: String) -> Bool { reader.dialect.addresses(version) }

    func warmUp(probing item: String?) async { await reader.warmUp(probing: item) }
}
