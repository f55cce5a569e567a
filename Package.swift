// swift-tools-version:6.0
import PackageDescription

// Layers (arrows point down only; the README's "Layers" lists them):
//   urlcache (tools/) → { CachingProxy, CacheMaintenance, BenchmarkDriver }
//   CachingProxy → { SharedURLCacheAsyncHTTPClient → SharedURLCache, CacheMaintenance (for /metrics) };  SharedURLCacheFoundation → SharedURLCache
//   SharedURLCache → { HTTPCacheSemantics, SharedURLCacheStore };  CacheMaintenance → { HTTPCacheSemantics, SharedURLCacheStore }
//   HTTPCacheSemantics, SharedURLCache, CacheMaintenance → CacheEntryFormat (the entry format, both ways)
//   BenchmarkDriver → { SharedURLCacheStore, SeededRandom };  SharedURLCacheStore → CSharedURLCache (the C core)
// Only SharedURLCacheStore imports the C core; only the C core touches LMDB, zlib and the directory layout.
// SUC_CORE_ONLY=1 leaves out everything built on SwiftNIO and AsyncHTTPClient (see the end of
// this file), so the sanitizer builds (scripts/sanitize.sh) instrument our code, not BoringSSL.
let coreOnly = Context.environment["SUC_CORE_ONLY"] == "1"

let package = Package(
    name: "SharedURLCache",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "SharedURLCacheStore", targets: ["SharedURLCacheStore"]),
        .library(name: "HTTPCacheSemantics", targets: ["HTTPCacheSemantics"]),
        .library(name: "SharedURLCache", targets: ["SharedURLCache"]),
        .library(name: "SharedURLCacheFoundation", targets: ["SharedURLCacheFoundation"]),
        .library(name: "CSharedURLCacheRawLimit", targets: ["CSharedURLCacheRawLimit"]),
        .executable(name: "urlcache", targets: ["urlcache"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-http-structured-headers.git", from: "1.7.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        // System libraries, found through pkg-config; the apt providers say what a fresh machine lacks.
        .systemLibrary(
            name: "CSharedURLCacheLMDB",
            path: "CSupport/system/lmdb",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        .systemLibrary(
            name: "CSharedURLCacheZlib",
            path: "CSupport/system/zlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // Whole-body decoding of the same zlib streams (CSupport/core/body.c); zlib stays for
        // compression and streaming reads.
        .systemLibrary(
            name: "CSharedURLCacheDeflate",
            path: "CSupport/system/libdeflate",
            pkgConfig: "libdeflate",
            providers: [.apt(["libdeflate-dev"])]
        ),
        .systemLibrary(
            name: "CSharedURLCacheCrypto",
            path: "CSupport/system/libcrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // The C core: the only code that touches LMDB, zlib and the on-disk layout.
        .target(
            name: "CSharedURLCache",
            dependencies: ["CSharedURLCacheLMDB", "CSharedURLCacheZlib", "CSharedURLCacheDeflate", "CSharedURLCacheCrypto"],
            path: "CSupport/core",
            cSettings: [.define("_GNU_SOURCE")],
            linkerSettings: [.linkedLibrary("lmdb"), .linkedLibrary("z"), .linkedLibrary("deflate"), .linkedLibrary("crypto")]
        ),
        // The machine's raw limit for the hot paths (a minimal C loop over LMDB + file + zlib),
        // measured beside the cache by the benchmarks and `urlcache bench`. Not used by the cache.
        .target(
            name: "CSharedURLCacheRawLimit",
            dependencies: ["CSharedURLCacheLMDB", "CSharedURLCacheZlib"],
            path: "CSupport/rawlimit",
            cSettings: [.define("_GNU_SOURCE")],
            linkerSettings: [.linkedLibrary("lmdb"), .linkedLibrary("z")]
        ),
        .target(
            name: "SharedURLCacheStore",
            dependencies: ["CSharedURLCache"]
        ),
        // The entry format, both ways: keys, variants, response heads, vary specs, record kinds
        // and userInfo, with one byte reader and writer (docs/Formats.md).
        .target(name: "CacheEntryFormat"),
        .target(
            name: "HTTPCacheSemantics",
            dependencies: [
                "CacheEntryFormat",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // RFC 9213 targeted cache-control fields are Structured Field Dictionaries.
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
            ]
        ),
        .target(
            name: "SharedURLCache",
            dependencies: [
                "SharedURLCacheStore",
                "HTTPCacheSemantics",
                "CacheEntryFormat",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // URLSession on Linux: real caching through a URLProtocol that runs the caching flow.
        .target(
            name: "SharedURLCacheFoundation",
            dependencies: ["SharedURLCache", .product(name: "HTTPTypes", package: "swift-http-types")]
        ),
        // `urlcache bench`: real processes on one directory, ours beside the raw limit and
        // Foundation's URLCache in the same run.
        .target(
            name: "BenchmarkDriver",
            dependencies: [
                "SharedURLCacheStore", "CSharedURLCacheRawLimit", "SeededRandom",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]
        ),
        .target(
            name: "CacheMaintenance",
            dependencies: [
                "SharedURLCacheStore", "HTTPCacheSemantics", "CacheEntryFormat",
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .executableTarget(
            name: "urlcache",
            dependencies: [
                "SharedURLCacheStore",
                "SharedURLCache",
                "HTTPCacheSemantics",
                "CacheMaintenance",
                "CacheEntryFormat",
                "BenchmarkDriver",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "tools/urlcache"
        ),
        // Helper executable spawned by the multi-process tests (real processes, not threads).
        .executableTarget(
            name: "CacheWorker",
            dependencies: ["SeededRandom", "SharedURLCacheStore", "SharedURLCache", "SharedURLCacheFoundation"],
            path: "Tests/CacheWorker"
        ),
        .testTarget(
            name: "SharedURLCacheStoreTests",
            dependencies: ["SeededRandom", "TestProcess", "SharedURLCacheStore", "CSharedURLCache"]
        ),
        .testTarget(
            name: "MultiProcessTests",
            dependencies: ["SeededRandom", "TestProcess", "SharedURLCacheStore", "CacheWorker"]
        ),
        // Test support: the seeded generator shared by tests and helper processes.
        .target(name: "SeededRandom"),
        // Test support: real child processes (drained pipes, a deadline) and temporary directories.
        .target(name: "TestProcess", dependencies: ["ParallelTestWidth"], path: "Tests/TestProcess"),
        // Test support: caps how many test cases a parallel `swift test` runs at once (a
        // constructor; see the file).
        .target(name: "ParallelTestWidth", path: "Tests/ParallelTestWidth"),
        // Test support: a loopback HTTP/1.1 origin that counts requests, and a tiny client.
        .target(
            name: "LoopbackOrigin",
            dependencies: [.product(name: "HTTPTypes", package: "swift-http-types")],
            path: "Tests/LoopbackOrigin"
        ),
        .testTarget(
            name: "SharedURLCacheTests",
            dependencies: ["SeededRandom", "TestProcess", "SharedURLCache", "SharedURLCacheStore", "CacheEntryFormat", "CacheWorker", "LoopbackOrigin"]
        ),
        .testTarget(
            name: "CacheMaintenanceTests",
            dependencies: ["CacheMaintenance", "SharedURLCacheStore", "HTTPCacheSemantics", "TestProcess", "CacheWorker", "urlcache"]
        ),
        // RELIABILITY T2–T18 with real processes (Tests/CacheWorker rel-* commands); long
        // variants with SUC_SOAK=1 (tools/soak).
        .testTarget(name: "ReliabilityTests", dependencies: ["SeededRandom", "TestProcess", "SharedURLCacheStore", "CacheWorker"]),
        // The entry format alone (heads, keys, variants, userInfo), both ways.
        .testTarget(name: "CacheEntryFormatTests", dependencies: ["CacheEntryFormat"]),
        .testTarget(
            name: "HTTPCacheSemanticsTests",
            dependencies: ["SeededRandom", "HTTPCacheSemantics", .product(name: "HTTPTypes", package: "swift-http-types")]
        ),
    ]
)

// The networking layer: the AsyncHTTPClient integration, `urlcache proxy` and their tests.
if !coreOnly {
    package.products += [
        .library(name: "SharedURLCacheAsyncHTTPClient", targets: ["SharedURLCacheAsyncHTTPClient"]),
        .library(name: "CachingProxy", targets: ["CachingProxy"]),
    ]
    // Declared only here, so a core-only build (the demo, the sanitizer runs) fetches none of
    // them. swift-nio-extras is named for NIOExtras' ServerQuiescingHelper.
    package.dependencies += [
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        // CachingHTTPClient's counters (swift-prometheus, which the core's `stats --prometheus`
        // uses, brings it too).
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
    ]
    // `urlcache proxy` (tools/urlcache/Subcommands/Proxy.swift, behind `#if canImport(CachingProxy)`);
    // its --parent options build the client's ParentTier.
    package.targets.first { $0.name == "urlcache" }?.dependencies += ["CachingProxy", "SharedURLCacheAsyncHTTPClient"]
    // What every target on the networking layer imports.
    let networking: [Target.Dependency] = [
        .product(name: "AsyncHTTPClient", package: "async-http-client"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "HTTPTypes", package: "swift-http-types"),
    ]
    package.targets += [
        // A caching client around AsyncHTTPClient, on the same flow and store.
        .target(
            name: "SharedURLCacheAsyncHTTPClient",
            dependencies: [
                "SharedURLCache",
                "HTTPCacheSemantics",
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ] + networking
        ),
        // `urlcache proxy`: an HTTP/1.1 reverse (or forward) proxy on SwiftNIO in front of
        // CachingHTTPClient, so services in any language share the cache directory.
        .target(
            name: "CachingProxy",
            dependencies: [
                "SharedURLCache",
                "SharedURLCacheAsyncHTTPClient",
                "CacheMaintenance", // the directory's part of /metrics, as `urlcache stats --prometheus`
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
            ] + networking
        ),
        // Test support: real Varnish instances (Debian's varnishd) as parent caches on loopback.
        .target(name: "VarnishParent", dependencies: ["LoopbackOrigin", "TestProcess"], path: "Tests/VarnishParent"),
        .testTarget(
            name: "CachingProxyTests",
            dependencies: [
                "CachingProxy", "SharedURLCache", "SharedURLCacheAsyncHTTPClient", "LoopbackOrigin", "TestProcess",
                "VarnishParent",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ] + networking
        ),
        .testTarget(
            name: "SharedURLCacheAsyncHTTPClientTests",
            dependencies: [
                "SharedURLCacheAsyncHTTPClient", "SharedURLCache", "CacheWorker", "LoopbackOrigin", "TestProcess",
                "VarnishParent",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ] + networking
        ),
        .testTarget(
            name: "SharedURLCacheFoundationTests",
            dependencies: ["SharedURLCacheFoundation", "SharedURLCache", "CacheWorker", "LoopbackOrigin", "TestProcess"]
        ),
    ]
}
