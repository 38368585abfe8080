import ChunkCache
import Foundation
import TestSupport
import Testing

/// The README's library example, line for line, with its paths and origin as parameters: if the API it shows
/// changes, this stops compiling. Keep the two in step.
private func readmeExample(store: String, file: String, origin: String) async throws -> (
    FetchResult, FetchResult, ReadResult
) {
    let cache = try await ChunkCache.open(at: store)
    let report = ItemIdentifier(domain: "docs", "report.pdf")
    let put = try await cache.put(fileAt: file, as: report)

    // 5,000 bytes at 100,000, aligned to 4 KiB: a sparse file of the item's length holding them at their offsets.
    let result = try await cache.fetchPartialContents(
        for: report, version: put.item.itemVersion,
        minimalRange: ByteRange(location: 100_000, length: 5_000), aligningTo: 4096)
    print(result.url.path, result.retrievedRange)  // the hand-off file is the caller's: delete it when done

    // A domain backed by an HTTP origin: a fetch downloads only the chunks the store lacks.
    _ = try await cache.addDomain("web", origin: try Origin(origin))
    let movie = try await cache.fetchContents(for: ItemIdentifier(domain: "web", "movie.mkv"))

    await cache.waitForDownloads()  // before exiting: downloads are kept raw behind the fetches (fills)
    _ = try await cache.settle()  // named, deduplicated, compressed; a process does it when idle

    let read = try readStart(of: report, in: cache)
    return (result, movie, read)
}

// A thread that cannot await (a FUSE worker, a C callback) reads into its own buffer, with no temp file.
private func readStart(of item: ItemIdentifier, in cache: ChunkCache) throws -> ReadResult {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
    defer { buffer.deallocate() }
    return try cache.read(item, version: nil, at: 0, into: buffer)  // .bytesRead, .item
}

@Suite struct ReadmeExampleTests {
    @Test("§9: the README's library example compiles and does what its comments say", .requires(NginxServer.self))
    func libraryExample() async throws {
        try await withTemporaryDirectory { dir in
            let report = TestData.text(count: 300_000, seed: 19)
            let movie = TestData.random(count: 200_000, seed: 20)
            try FileManager.default.createDirectory(atPath: dir + "/origin", withIntermediateDirectories: true)
            try TestData.write(report, to: dir + "/report.pdf")
            try TestData.write(movie, to: dir + "/origin/movie.mkv")
            let server = try await NginxServer.start(root: URL(fileURLWithPath: dir + "/origin"))
            do {
                let (range, whole, read) = try await readmeExample(
                    store: dir + "/store", file: dir + "/report.pdf", origin: server.baseURL)
                defer {
                    unlink(range.url.path)
                    unlink(whole.url.path)
                }
                #expect(range.retrievedRange == ByteRange(location: 65_536, length: 65_536))
                #expect(
                    try TestData.read(range.url.path, offset: 100_000, count: 5_000) == Array(report[100_000..<105_000])
                )
                #expect(try TestData.read(whole.url.path, offset: 0, count: movie.count) == movie)
                #expect(read.bytesRead == 65_536)
                await server.stop()
            } catch {
                await server.stop()
                throw error
            }
        }
    }
}
