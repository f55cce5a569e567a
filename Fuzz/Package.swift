// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets (RELIABILITY T12). Build and run with scripts/fuzz.sh; the checks are the
// very file CacheWorker uses to replay Fuzz/FailCases in CI (Sources/FuzzChecks are symlinks).
let package = Package(
    name: "SharedURLCacheFuzz",
    dependencies: [
        .package(name: "SharedURLCache", path: ".."),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
    ],
    targets: [
        .target(
            name: "FuzzChecks",
            dependencies: [
                .product(name: "SharedURLCacheStore", package: "SharedURLCache"),
                .product(name: "HTTPCacheSemantics", package: "SharedURLCache"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .executableTarget(name: "FuzzCacheControl", dependencies: ["FuzzChecks"]),
        .executableTarget(name: "FuzzHTTPDate", dependencies: ["FuzzChecks"]),
        .executableTarget(name: "FuzzVary", dependencies: ["FuzzChecks"]),
        .executableTarget(name: "FuzzRecordDecode", dependencies: ["FuzzChecks"]),
        .executableTarget(name: "FuzzBodyFile", dependencies: ["FuzzChecks"]),
    ]
)
