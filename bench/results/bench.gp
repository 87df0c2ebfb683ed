
set terminal png size 1200,500 noenhanced
set output 'bench/results/bench.png'
set multiplot layout 1,2 title 'qrdma vs rxe, same guests, interleaved (medians)'
set logscale x 2
set logscale y
set grid
set key left top
set xlabel 'message size (bytes)'
set ylabel 'MiB/s'
set title 'bandwidth'
set xtics ("64" 64, "256" 256, "1K" 1024, "4K" 4096, "16K" 16384, "64K" 65536, "256K" 262144, "1M" 1048576)
plot 'bench/results/qrdma-1500-write_bw.dat' using 1:2 with lp pt 7 title 'qrdma MTU 1500 write_bw', 'bench/results/qrdma-1500-read_bw.dat' using 1:2 with lp pt 7 title 'qrdma MTU 1500 read_bw', 'bench/results/qrdma-1500-send_bw.dat' using 1:2 with lp pt 7 title 'qrdma MTU 1500 send_bw', 'bench/results/rxe-1500-write_bw.dat' using 1:2 with lp pt 5 dt 2 title 'rxe MTU 1500 write_bw', 'bench/results/rxe-1500-read_bw.dat' using 1:2 with lp pt 5 dt 2 title 'rxe MTU 1500 read_bw', 'bench/results/rxe-1500-send_bw.dat' using 1:2 with lp pt 5 dt 2 title 'rxe MTU 1500 send_bw', 'bench/results/qrdma-9000-write_bw.dat' using 1:2 with lp pt 7 title 'qrdma MTU 9000 write_bw', 'bench/results/qrdma-9000-read_bw.dat' using 1:2 with lp pt 7 title 'qrdma MTU 9000 read_bw', 'bench/results/qrdma-9000-send_bw.dat' using 1:2 with lp pt 7 title 'qrdma MTU 9000 send_bw', 'bench/results/rxe-9000-write_bw.dat' using 1:2 with lp pt 5 dt 2 title 'rxe MTU 9000 write_bw', 'bench/results/rxe-9000-read_bw.dat' using 1:2 with lp pt 5 dt 2 title 'rxe MTU 9000 read_bw', 'bench/results/rxe-9000-send_bw.dat' using 1:2 with lp pt 5 dt 2 title 'rxe MTU 9000 send_bw'
set ylabel 'microseconds'
set title 'latency (typical)'
set key right center
set xtics ("8" 8, "32" 32, "128" 128, "512" 512, "2K" 2048, "4K" 4096)
plot 'bench/results/qrdma-1500-write_lat.dat' using 1:2 with lp pt 7 title 'qrdma MTU 1500 write_lat', 'bench/results/qrdma-1500-send_lat.dat' using 1:2 with lp pt 7 title 'qrdma MTU 1500 send_lat', 'bench/results/rxe-1500-write_lat.dat' using 1:2 with lp pt 5 dt 2 title 'rxe MTU 1500 write_lat', 'bench/results/rxe-1500-send_lat.dat' using 1:2 with lp pt 5 dt 2 title 'rxe MTU 1500 send_lat', 'bench/results/qrdma-9000-write_lat.dat' using 1:2 with lp pt 7 title 'qrdma MTU 9000 write_lat', 'bench/results/qrdma-9000-send_lat.dat' using 1:2 with lp pt 7 title 'qrdma MTU 9000 send_lat', 'bench/results/rxe-9000-write_lat.dat' using 1:2 with lp pt 5 dt 2 title 'rxe MTU 9000 write_lat', 'bench/results/rxe-9000-send_lat.dat' using 1:2 with lp pt 5 dt 2 title 'rxe MTU 9000 send_lat'
unset multiplot
