// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "ChunkCache",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ChunkCache", targets: ["ChunkCache"]),
        .executable(name: "chunkcache", targets: ["chunkcache"]),
        .executable(name: "chunkcache-bench", targets: ["chunkcache-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        // HTTP(S) and S3 origins: SwiftNIO's client (async, connection pool, TLS); see the DocC article Choices.md.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/ordo-one/package-benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        // `swift package generate-documentation` (scripts/docs.sh): builds Sources/ChunkCache/ChunkCache.docc.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // C libraries, linked from the system (no vendored copies).
        .systemLibrary(name: "CLMDB", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"]), .brew(["zstd"])]),
        .systemLibrary(
            name: "CXXHash", pkgConfig: "libxxhash", providers: [.apt(["libxxhash-dev"]), .brew(["xxhash"])]),
        .target(name: "CLinuxShims", cSettings: [.define("_GNU_SOURCE")]),
        .systemLibrary(name: "CFuse3", pkgConfig: "fuse3", providers: [.apt(["libfuse3-dev"])]),

        // One job each.
        .target(name: "LMDBKit", dependencies: ["CLMDB", "FileIO"]),
        .target(name: "ZstdKit", dependencies: ["CZstd"]),
        // The rolling match that places a new chunk's base in an earlier version (deltas, CONTRACT §14).
        .target(name: "DeltaKit", dependencies: ["CXXHash"]),
        .target(name: "FileIO", dependencies: ["CLinuxShims"]),
        // The seeded generator (SplitMix64) the benchmarks and the tests draw from, apart from both so the
        // low-level test targets need not link the engine.
        .target(name: "SeededRandom"),
        // FUSE's low-level API (libfuse 3), typed; and a domain served through it (`chunkcache mount`).
        .target(name: "FuseKit", dependencies: ["CFuse3", "FileIO"]),
        .target(name: "ChunkCacheMount", dependencies: ["ChunkCache", "FuseKit", "FileIO"]),
        // AWS Signature Version 4, for S3 origins (no S3 SDK: a small signer on swift-crypto's HMAC).
        .target(name: "SigV4", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        // Remote origins (HTTP(S), S3): ranged reads, probes and listings as async byte streams.
        .target(
            name: "OriginKit",
            dependencies: [
                "SigV4", .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),

        // The engine: the only product API.
        .target(
            name: "ChunkCache",
            dependencies: [
                "LMDBKit", "ZstdKit", "FileIO", "CXXHash", "OriginKit", "DeltaKit",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // What `chunkcache-bench` and the benchmark suite share: the floors and latency statistics.
        .target(name: "ChunkCacheBench", dependencies: ["ChunkCache", "ZstdKit", "FileIO", "SeededRandom"]),
        .target(
            name: "ChunkCacheCommands",
            dependencies: [
                "ChunkCache", "ChunkCacheMount", "FileIO", "FuseKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "chunkcache", dependencies: ["ChunkCacheCommands"],
            // Every command pays the process start: with the Swift runtime and Foundation linked in, the dynamic
            // loader has no 20 libraries to map and relocate (issue 20). main.swift compiled with the flag names
            // the static Foundation's own libraries for the link. A root package's flags (the library product
            // stays free of them); release only, so debug builds and the tests' binary link fast.
            swiftSettings: [.unsafeFlags(["-static-stdlib"], .when(platforms: [.linux], configuration: .release))],
            linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(platforms: [.linux], configuration: .release))]
        ),
        // `chunkcache-bench`: the engine measured on the user's own files beside its floors (read-latency, dedup,
        // churn, deltas). Its commands apart from ChunkCacheBench, so the benchmark suite links no command line.
        .target(
            name: "ChunkCacheBenchCommands",
            dependencies: [
                "ChunkCache", "ChunkCacheBench", "ChunkCacheCommands", "DeltaKit", "FileIO", "LMDBKit", "SeededRandom",
                "ZstdKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "chunkcache-bench", dependencies: ["ChunkCacheBenchCommands"]),
        // Fuzzing (Fuzz/README.md): the decoders of outside bytes as targets, and libFuzzer's driver for them.
        .target(
            name: "FuzzTargets",
            dependencies: ["ChunkCache", "ChunkCacheCommands", "DeltaKit", "FileIO", "OriginKit", "ZstdKit"]),
        .executableTarget(name: "chunkcache-fuzz", dependencies: ["FuzzTargets", "FileIO"]),

        .target(name: "TestSupport", dependencies: ["LMDBKit", "SeededRandom"], path: "Tests/TestSupport"),
        .testTarget(name: "LMDBKitTests", dependencies: ["LMDBKit", "TestSupport"]),
        .testTarget(name: "ZstdKitTests", dependencies: ["ZstdKit", "TestSupport"]),
        .testTarget(name: "DeltaKitTests", dependencies: ["DeltaKit", "TestSupport"]),
        .testTarget(name: "FileIOTests", dependencies: ["FileIO", "SeededRandom", "TestSupport"]),
        .testTarget(name: "SeededRandomTests", dependencies: ["SeededRandom"]),
        .testTarget(name: "SigV4Tests", dependencies: ["SigV4"]),
        .testTarget(name: "OriginKitTests", dependencies: ["OriginKit", "SigV4", "TestSupport"]),
        .testTarget(
            name: "ChunkCacheTests", dependencies: ["ChunkCache", "FileIO", "OriginKit", "SeededRandom", "TestSupport"]),
        .testTarget(
            name: "ChunkCacheIntegrationTests",
            dependencies: ["ChunkCache", "FileIO", "LMDBKit", "SeededRandom", "TestSupport"]),
        .testTarget(
            name: "ChunkCacheCommandsTests",
            dependencies: ["ChunkCacheCommands", "ChunkCache", "FuseKit", "SeededRandom", "TestSupport"]),
        .testTarget(name: "FuzzTargetsTests", dependencies: ["FuzzTargets", "TestSupport"]),

        .executableTarget(
            name: "ChunkCacheBenchmarks",
            dependencies: [
                "ChunkCache", "ChunkCacheBench", "ZstdKit", "FileIO", "OriginKit", "SeededRandom",
                .product(name: "Benchmark", package: "package-benchmark"),
            ],
            path: "Benchmarks/ChunkCacheBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
