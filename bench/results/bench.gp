
set terminal png size 1200,500 noenhanced
set output './bench.png'
set multiplot layout 1,2 title 'qrdma vs rxe (guests under the same accelerator)'
set logscale x 2
set logscale y
set grid
set key left top
set xlabel 'message size (bytes)'
set ylabel 'MiB/s'
set title 'bandwidth'
set xtics ("64" 64, "256" 256, "1K" 1024, "4K" 4096, "16K" 16384, "64K" 65536, "256K" 262144, "1M" 1048576)
plot './qrdma-write_bw.dat' using 1:2 with lp pt 7 title 'qrdma write_bw', './qrdma-read_bw.dat' using 1:2 with lp pt 7 title 'qrdma read_bw', './qrdma-send_bw.dat' using 1:2 with lp pt 7 title 'qrdma send_bw', './rxe-write_bw.dat' using 1:2 with lp pt 5 dt 2 title 'rxe write_bw', './rxe-read_bw.dat' using 1:2 with lp pt 5 dt 2 title 'rxe read_bw', './rxe-send_bw.dat' using 1:2 with lp pt 5 dt 2 title 'rxe send_bw'
set ylabel 'microseconds'
set title 'latency'
set key right center
set xtics ("8" 8, "32" 32, "128" 128, "512" 512, "2K" 2048, "4K" 4096)
plot './qrdma-write_lat.dat' using 1:2 with lp pt 7 title 'qrdma write_lat', './qrdma-send_lat.dat' using 1:2 with lp pt 7 title 'qrdma send_lat', './qrdma-read_lat.dat' using 1:2 with lp pt 7 title 'qrdma read_lat', './rxe-write_lat.dat' using 1:2 with lp pt 5 dt 2 title 'rxe write_lat', './rxe-send_lat.dat' using 1:2 with lp pt 5 dt 2 title 'rxe send_lat', './rxe-read_lat.dat' using 1:2 with lp pt 5 dt 2 title 'rxe read_lat'
unset multiplot
