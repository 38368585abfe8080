import ChunkCache
import ChunkCacheCommands
import OriginKit

/// A decoder of outside bytes under fuzzing: its name (a folder of `Fuzz/corpus`) and a check that decodes
/// the bytes and returns what is wrong with the result, or nil.
public struct FuzzTarget: Sendable {
    public let name: String
    /// What the target decodes, for `chunkcache-fuzz --list`.
    public let summary: String
    public let check: @Sendable (UnsafeRawBufferPointer) -> String?

    /// Every target, in the order `scripts/fuzz.sh` runs them.
    public static let all: [FuzzTarget] = [
        FuzzTarget(
            name: "byte-size-range", summary: "--size, --range START:LENGTH", check: CommandFuzzing.byteSizeAndRange),
        FuzzTarget(name: "duration", summary: "--timeout, --keep-for", check: CommandFuzzing.duration),
        FuzzTarget(
            name: "version-fast-path", summary: "a command line (NUL-separated) with or without --version",
            check: CommandFuzzing.versionFastPath),
        FuzzTarget(name: "content-range", summary: "Content-Range", check: OriginFuzzing.contentRange),
        FuzzTarget(name: "retry-after", summary: "Retry-After", check: OriginFuzzing.retryAfter),
        FuzzTarget(
            name: "response-headers",
            summary: "ETag, Last-Modified, x-amz-version-id, Content-Range, Retry-After of a response",
            check: OriginFuzzing.responseHeaders),
        FuzzTarget(
            name: "multipart-byteranges", summary: "a multipart/byteranges answer, fed whole and in pieces",
            check: OriginFuzzing.multipartByteranges),
        FuzzTarget(name: "nginx-listing", summary: "nginx autoindex_format json", check: OriginFuzzing.nginxListing),
        FuzzTarget(name: "s3-listing", summary: "S3 ListObjectsV2 and error XML", check: OriginFuzzing.s3Listing),
        FuzzTarget(name: "origin-header", summary: "--header 'Name: value'", check: EngineFuzzing.originHeader),
        FuzzTarget(name: "sync-tokens", summary: "sync anchors and page tokens", check: EngineFuzzing.syncTokens),
        FuzzTarget(
            name: "records", summary: "every record type of the store, and its keys", check: EngineFuzzing.records),
        FuzzTarget(
            name: "manifest-page", summary: "manifest pages and their rewrite", check: EngineFuzzing.manifestPage),
        FuzzTarget(
            name: "stored-chunk", summary: "a stored chunk (raw, zstd or hot)", check: EngineFuzzing.storedChunk),
        FuzzTarget(name: "page-file", summary: "the LMDB pages `recover` reads", check: EngineFuzzing.pageFile),
        FuzzTarget(
            name: "delta-frame", summary: "a delta frame read against its base (§14)", check: DeltaFuzzing.deltaFrame),
        FuzzTarget(
            name: "rolling-match", summary: "the rolling matcher over an earlier version (§14)",
            check: DeltaFuzzing.rollingMatch),
    ]

    public static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }
}
