Constant TileSize 4;
Network gemm_net {
Layer G1 {
Type: GEMM
Dimensions { K: 64, M: 32, N: 16 }
Dataflow {
        SpatialMap(1,1) M;
        TemporalMap(TileSize,TileSize) N;
        TemporalMap(16,16) K;
        Cluster(8, P);
        SpatialMap(1,1) N;
}
}
}
