// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets (docs/Reliability.md T12). Build and run with scripts/fuzz.sh; the checks are the
// very file CacheWorker uses to replay Fuzz/FailCases in CI (Sources/FuzzChecks are symlinks, the
// seeded generator of Sources/SeededRandom among them: a target of that name here would clash with
// the main package's).
let package = Package(
    name: "SharedURLCacheFuzz",
    dependencies: [
        .package(name: "SharedURLCache", path: ".."),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
    ],
    targets: [
        // libFuzzer's driver entry, declared for Swift (see its header).
        .target(name: "FuzzDriver"),
        .target(
            name: "FuzzChecks",
            dependencies: [
                .product(name: "SharedURLCacheStore", package: "SharedURLCache"),
                .product(name: "HTTPCacheSemantics", package: "SharedURLCache"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .executableTarget(name: "FuzzCacheControl", dependencies: ["FuzzChecks", "FuzzDriver"]),
        .executableTarget(name: "FuzzHTTPDate", dependencies: ["FuzzChecks", "FuzzDriver"]),
        .executableTarget(name: "FuzzVary", dependencies: ["FuzzChecks", "FuzzDriver"]),
        .executableTarget(name: "FuzzRecordDecode", dependencies: ["FuzzChecks", "FuzzDriver"]),
        .executableTarget(name: "FuzzBodyFile", dependencies: ["FuzzChecks", "FuzzDriver"]),
    ]
)

// The proxy's request path (FuzzProxyRequest: raw client bytes through the pipeline a ProxyServer
// connection runs), built on SwiftNIO; scripts/fuzz.sh builds it in a scratch directory of its
// own without SUC_CORE_ONLY, so the targets above stay core-only.
if Context.environment["SUC_CORE_ONLY"] != "1" {
    package.dependencies += [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
    ]
    package.targets += [
        .target(
            name: "FuzzProxyChecks",
            dependencies: [
                .product(name: "CachingProxy", package: "SharedURLCache"),
                .product(name: "SharedURLCacheAsyncHTTPClient", package: "SharedURLCache"),
                .product(name: "SharedURLCache", package: "SharedURLCache"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .executableTarget(name: "FuzzProxyRequest", dependencies: ["FuzzProxyChecks", "FuzzDriver"]),
    ]
}
