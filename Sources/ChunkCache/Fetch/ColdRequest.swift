import FileIO
import Foundation
import OriginKit

/// What a fetch tells the cold path about itself. Made in one place, where the cold path starts
/// (``ChunkCache/throughOrigin(_:options:request:servesFromDownload:streamed:first:serve:)``).
struct ColdRequest: Sendable {
    let item: ItemIdentifier
    let strict: Bool
    /// The range asked for; nil for the whole file.
    let minimal: ByteRange?
    let alignment: Int
    let counters: DownloadProgress
    /// The fetch may be served from the bytes it downloads, before they are stored (``DirectBytes``).
    let servesFromDownload: Bool
    /// The fetch's own file, written from its download as the bytes arrive (a large range).
    let streamed: StreamedFile?
    /// The fetch's claim on what it downloads, which eviction spares until the fetch ends.
    let claim: UnreadDownloads.Claim

    init(
        _ target: ColdTarget, options: FetchOptions, request: FetchRequest, servesFromDownload: Bool,
        streamed: StreamedFile?, downloads: UnreadDownloads
    ) {
        item = target.item
        strict = options.contains(.strictVersioning)
        minimal = target.minimal
        alignment = target.alignment
        counters = request.progress ?? DownloadProgress()
        self.servesFromDownload = servesFromDownload && streamed == nil
        self.streamed = streamed
        claim = downloads.claim()
    }
}

extension Result where Failure == any Error {
    init(_ body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
