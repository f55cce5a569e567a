// swift-tools-version: 6.1
import PackageDescription

// Throughput benchmarks (ordo-one/benchmark): SharedURLCache side by side with Foundation's
// URLCache and the raw limit (CSharedURLCacheRawLimit), in one run. See README.md.
let package = Package(
    name: "SharedURLCacheBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "SharedURLCache", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "Throughput",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SharedURLCache", package: "SharedURLCache"),
                .product(name: "SharedURLCacheStore", package: "SharedURLCache"),
                .product(name: "HTTPCacheSemantics", package: "SharedURLCache"),
                .product(name: "CSharedURLCacheRawLimit", package: "SharedURLCache"),
            ],
            path: "Benchmarks/Throughput",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    ]
)
